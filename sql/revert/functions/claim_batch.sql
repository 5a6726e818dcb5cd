-- Revert pgflight:functions/claim_batch
begin;
set local role pgflight_owner;
drop function pgflight.claim_batch(bigint, integer, double precision, text[], jsonb);
commit;
