-- Verify pgflight:roles/pgflight_cron
select 1 / count(*)::int from pg_catalog.pg_roles
 where rolname = 'pgflight_cron' and rolcanlogin and not rolsuper;
