-- Verify pgflight:functions/complete_and_claim
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight.complete_and_claim(bigint, bigint[], bigint[], jsonb[], integer, double precision, text[], jsonb)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight.complete_and_claim(bigint, bigint[], bigint[], jsonb[], integer, double precision, text[], jsonb) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
