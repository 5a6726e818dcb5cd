-- Revert pgflight:functions/wake_parents
begin;
set local role pgflight_owner;
drop function pgflight.wake_parents(integer);
commit;
