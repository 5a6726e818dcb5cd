-- Verify pgflight:tables/sweep_state
select 1 / (c.relkind in ('r', 'p', 'S'))::int from pg_catalog.pg_class c where c.oid = 'pgflight.sweep_state'::regclass;
