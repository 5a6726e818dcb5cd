-- Revert pgflight:functions/wake_parents@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.wake_parents(integer);
commit;
