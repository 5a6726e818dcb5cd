-- Verify pgflight:roles/owner_replication_role
-- Deployed by a superuser, the owner may set session_replication_role.
select 1 / count(*)::int from pg_catalog.pg_roles
 where rolname = current_user
   and (not rolsuper or pg_catalog.has_parameter_privilege('pgflight_owner', 'session_replication_role', 'SET'));
