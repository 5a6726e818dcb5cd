-- Revert pgflight:internals/_park_on_wait
begin;
set local role pgflight_owner;
drop function pgflight._park_on_wait(pgflight.step_attempts, pgflight.waits);
commit;
