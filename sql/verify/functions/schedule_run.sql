-- Verify pgflight:functions/schedule_run
select 'pgflight.schedule_run(text, text, text, text, jsonb, jsonb)'::regprocedure;
