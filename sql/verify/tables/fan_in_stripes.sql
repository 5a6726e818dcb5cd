-- Verify pgflight:tables/fan_in_stripes
select 1 / (c.relkind in ('r', 'p', 'S'))::int from pg_catalog.pg_class c where c.oid = 'pgflight.fan_in_stripes'::regclass;
