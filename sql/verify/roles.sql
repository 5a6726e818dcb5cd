-- Verify pgflight:roles
select 1 / count(*)::int from pg_catalog.pg_roles
 where rolname in ('pgflight_owner', 'pgflight_worker', 'pgflight_operator', 'pgflight_reader')
having count(*) = 4;
