-- Revert pgflight:functions/wake_parked_keys@v0.3.0
begin;
set local role pgflight_owner;
drop function pgflight.wake_parked_keys(integer);
commit;
