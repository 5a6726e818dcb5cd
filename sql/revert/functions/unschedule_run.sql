-- Revert pgflight:functions/unschedule_run
begin;
set local role pgflight_owner;
drop function pgflight.unschedule_run(text, text);
commit;
