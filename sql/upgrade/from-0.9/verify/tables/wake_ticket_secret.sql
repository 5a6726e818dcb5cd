-- Verify pgflight:tables/wake_ticket_secret
select id, secret from pgflight.wake_ticket_secret where false;
