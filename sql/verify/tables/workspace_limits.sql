-- Verify pgflight:tables/workspace_limits
select 1 / (c.relkind in ('r', 'p', 'S'))::int from pg_catalog.pg_class c where c.oid = 'pgflight.workspace_limits'::regclass;
