-- Verify pgflight:functions/submit_run
select 'pgflight.submit_run(text, text, jsonb, jsonb)'::regprocedure;
