-- Revert pgflight:functions/complete_batch
begin;
set local role pgflight_owner;
drop function pgflight.complete_batch(bigint[], bigint[], text[]);
drop function pgflight.complete_batch(bigint[], bigint[], jsonb[]);
commit;
