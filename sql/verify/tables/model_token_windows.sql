-- Verify pgflight:tables/model_token_windows
select 1 / (c.relkind in ('r', 'p', 'S'))::int from pg_catalog.pg_class c where c.oid = 'pgflight.model_token_windows'::regclass;
