-- Verify pgflight:internals/_reclaim_picked@v1.0.0
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._reclaim_picked(timestamp with time zone, bigint[])'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp', 'enable_seqscan=off', 'enable_hashjoin=off', 'enable_mergejoin=off']::text[] then
    raise exception 'pgflight._reclaim_picked(timestamp with time zone, bigint[]) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp', 'enable_seqscan=off', 'enable_hashjoin=off', 'enable_mergejoin=off']::text[];
  end if;
end
$verify$;
