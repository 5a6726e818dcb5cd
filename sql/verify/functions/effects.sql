-- Verify pgflight:functions/effects
select 'pgflight.record_effect(bigint, bigint, text, jsonb)'::regprocedure;
select 'pgflight.find_effect(bigint, text)'::regprocedure;
