-- Revert pgflight:functions/record_model_call
begin;
drop function pgflight.record_model_call(bigint, bigint, bigint, integer, jsonb, jsonb, text, jsonb);
commit;
