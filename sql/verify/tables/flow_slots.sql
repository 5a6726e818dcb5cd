-- Verify pgflight:tables/flow_slots
select 1 / (c.relkind in ('r', 'p', 'S'))::int from pg_catalog.pg_class c where c.oid = 'pgflight.flow_slots'::regclass;
