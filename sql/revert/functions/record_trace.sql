-- Revert pgflight:functions/record_trace
begin;
set local role pgflight_owner;
drop function pgflight.record_trace(bigint, bigint, bigint, integer, text, text, jsonb, jsonb);
commit;
