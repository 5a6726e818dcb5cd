-- Verify pgflight:internals/_lease_attempts
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._lease_attempts(bigint, bigint[], double precision, boolean, timestamp with time zone, smallint)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_generic_plan', 'enable_seqscan=off']::text[] then
    raise exception 'pgflight._lease_attempts(bigint, bigint[], double precision, boolean, timestamp with time zone, smallint) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_generic_plan', 'enable_seqscan=off']::text[];
  end if;
end
$verify$;
