-- Verify pgflight:tables/model_prices
select 1 / (c.relkind in ('r', 'p', 'S'))::int from pg_catalog.pg_class c where c.oid = 'pgflight.model_prices'::regclass;
