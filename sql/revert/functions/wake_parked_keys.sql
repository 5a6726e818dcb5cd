-- Revert pgflight:functions/wake_parked_keys
begin;
set local role pgflight_owner;
drop function pgflight.wake_parked_keys(integer);
commit;
