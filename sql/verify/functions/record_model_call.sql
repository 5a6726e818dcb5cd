-- Verify pgflight:functions/record_model_call
select 'pgflight.record_model_call(bigint, bigint, bigint, integer, jsonb, jsonb, text, jsonb)'::regprocedure;
