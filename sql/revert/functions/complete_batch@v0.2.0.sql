-- Revert pgflight:functions/complete_batch@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.complete_batch(bigint[], bigint[], jsonb[]);
commit;
