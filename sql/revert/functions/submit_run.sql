-- Revert pgflight:functions/submit_run
begin;
drop function pgflight.submit_run(text, text, jsonb, jsonb);
commit;
