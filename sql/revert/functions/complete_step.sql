-- Revert pgflight:functions/complete_step
begin;
drop function pgflight.complete_batch(bigint[], bigint[], jsonb[]);
drop function pgflight.complete_step(bigint, bigint, jsonb);
drop function pgflight._complete_many(bigint[], bigint[], jsonb[], timestamptz);
commit;
