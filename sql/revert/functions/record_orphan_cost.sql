-- Revert pgflight:functions/record_orphan_cost
begin;
set local role pgflight_owner;
drop function pgflight.record_orphan_cost(bigint, bigint, bigint, integer, jsonb, text, jsonb);
commit;
