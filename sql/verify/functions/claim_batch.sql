-- Verify pgflight:functions/claim_batch
select 'pgflight.claim_batch(bigint, integer, double precision, text[], jsonb)'::regprocedure;
