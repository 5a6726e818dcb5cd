-- Verify pgflight:internals/_fill_attempt_flow
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._fill_attempt_flow()'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp', 'enable_seqscan=off']::text[] then
    raise exception 'pgflight._fill_attempt_flow() has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp', 'enable_seqscan=off']::text[];
  end if;
end
$verify$;
