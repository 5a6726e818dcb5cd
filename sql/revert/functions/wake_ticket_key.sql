-- Revert pgflight:functions/wake_ticket_key
begin;
set local role pgflight_owner;
drop function pgflight.wake_ticket_key(bigint);
commit;
