-- Verify pgflight:functions/claim_batch@v1.0.0
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight.claim_batch(bigint, integer, double precision, text[], jsonb)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp', 'enable_sort=off', 'enable_seqscan=off', 'jit=off']::text[] then
    raise exception 'pgflight.claim_batch(bigint, integer, double precision, text[], jsonb) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp', 'enable_sort=off', 'enable_seqscan=off', 'jit=off']::text[];
  end if;
end
$verify$;
