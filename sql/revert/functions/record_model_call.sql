-- Revert pgflight:functions/record_model_call
begin;
set local role pgflight_owner;
drop function pgflight.record_model_call(bigint, bigint, bigint, integer, jsonb, jsonb, text, jsonb, numeric);
commit;
