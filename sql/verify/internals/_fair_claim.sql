-- Verify pgflight:internals/_fair_claim
select 'pgflight._claim_fair(bigint, integer, double precision, text[], boolean, timestamptz)'::regprocedure;
select 'pgflight._claim_lane(bigint, bigint, text, integer, double precision, boolean, timestamptz)'::regprocedure;
