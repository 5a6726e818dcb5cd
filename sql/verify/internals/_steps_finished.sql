-- Verify pgflight:internals/_steps_finished
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._steps_finished(bigint[], text[], text, timestamp with time zone)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_generic_plan', 'enable_seqscan=off']::text[] then
    raise exception 'pgflight._steps_finished(bigint[], text[], text, timestamp with time zone) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_generic_plan', 'enable_seqscan=off']::text[];
  end if;
end
$verify$;
