-- Verify pgflight:tables/wake_ticket_secret
select 1 / (c.relkind in ('r', 'p', 'S'))::int from pg_catalog.pg_class c where c.oid = 'pgflight.wake_ticket_secret'::regclass;
