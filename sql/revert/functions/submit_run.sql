-- Revert pgflight:functions/submit_run
begin;
set local role pgflight_owner;
drop function pgflight.submit_run(text, text, jsonb, jsonb);
commit;
