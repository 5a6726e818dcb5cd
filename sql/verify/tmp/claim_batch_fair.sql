select 'pgflight.claim_batch(bigint, integer, double precision, text[], jsonb)'::regprocedure;
