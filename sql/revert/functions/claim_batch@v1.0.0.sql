-- Revert pgflight:functions/claim_batch@v1.0.0
begin;
set local role pgflight_owner;
drop function pgflight.claim_batch(bigint, integer, double precision, text[], jsonb);
commit;
