-- Verify pgflight:tables/event_channels
select 1 / (c.relkind in ('r', 'p', 'S'))::int from pg_catalog.pg_class c where c.oid = 'pgflight.event_channels'::regclass;
