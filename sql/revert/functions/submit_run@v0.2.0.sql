-- Revert pgflight:functions/submit_run@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.submit_run(text, text, jsonb, jsonb);
commit;
