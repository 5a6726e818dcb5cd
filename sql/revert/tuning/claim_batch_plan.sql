-- Revert pgflight:tuning/claim_batch_plan
begin;
set local role pgflight_owner;
alter function pgflight.claim_batch(bigint, integer, double precision, text[], jsonb) reset enable_sort;
alter function pgflight.claim_batch(bigint, integer, double precision, text[], jsonb) reset jit;
commit;
