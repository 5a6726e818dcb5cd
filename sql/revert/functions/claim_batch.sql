-- Revert pgflight:functions/claim_batch
begin;
drop function pgflight.claim_batch(bigint, integer, double precision, text[], jsonb);
commit;
