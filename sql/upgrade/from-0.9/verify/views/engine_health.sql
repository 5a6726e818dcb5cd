-- Verify pgflight:views/engine_health
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
select 1 / (c.relkind = 'v')::int from pg_catalog.pg_class c where c.oid = 'pgflight.engine_health'::regclass;
