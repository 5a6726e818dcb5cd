-- Revert pgflight:functions/record_model_call@v1.0.0
begin;
set local role pgflight_owner;
drop function pgflight.record_model_call(bigint, bigint, bigint, integer, jsonb, jsonb, text, jsonb, numeric);
commit;
