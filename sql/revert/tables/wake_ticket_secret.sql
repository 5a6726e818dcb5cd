-- Revert pgflight:tables/wake_ticket_secret
begin;
set local role pgflight_owner;
drop table pgflight.wake_ticket_secret;
commit;
