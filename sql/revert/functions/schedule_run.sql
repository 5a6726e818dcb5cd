-- Revert pgflight:functions/schedule_run
begin;
set local role pgflight_owner;
drop function pgflight.schedule_run(text, text, text, text, jsonb, jsonb);
commit;
