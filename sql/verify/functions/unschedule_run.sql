-- Verify pgflight:functions/unschedule_run
select 'pgflight.unschedule_run(text, text)'::regprocedure;
