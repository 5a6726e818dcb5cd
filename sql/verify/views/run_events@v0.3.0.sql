-- Verify pgflight:views/run_events@v0.3.0
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
select 1 / (c.relkind = 'v')::int from pg_catalog.pg_class c where c.oid = 'pgflight.run_events'::regclass;
