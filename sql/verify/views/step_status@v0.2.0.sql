-- Verify pgflight:views/step_status@v0.2.0
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
select 1 / (c.relkind = 'v')::int from pg_catalog.pg_class c where c.oid = 'pgflight.step_status'::regclass;
