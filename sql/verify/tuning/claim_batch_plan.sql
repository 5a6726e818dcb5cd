-- Verify pgflight:tuning/claim_batch_plan
select 1 / (count(*) = 2)::int
  from pg_catalog.pg_proc p, pg_catalog.unnest(p.proconfig) c
 where p.oid = 'pgflight.claim_batch(bigint, integer, double precision, text[], jsonb)'::regprocedure
   and c in ('enable_sort=off', 'jit=off');
