-- Deploy pgflight:roles/owner_sets_replication_role
-- requires: roles
-- pgflight_owner may set session_replication_role (enqueue). submit_runs sets it to
-- replica, locally, around the inserts of a large call, so the per-row foreign key checks of rows
-- it has just created itself (a run's root step, a step's first attempt) do not run; it decides
-- at each call with has_parameter_privilege, so without this grant it keeps the checks and is
-- slower, never wrong. Only a superuser may grant it (PostgreSQL 15 and later: GRANT SET ON
-- PARAMETER); another deployer gets a notice. pgflight_owner never logs in: only its security
-- definer functions run with it, and the members of pgflight_owner (the deployer) already own
-- every pgflight table and its triggers. Parameter privileges are cluster-wide, like roles.
begin;

do $$
begin
  if pg_catalog.current_setting('server_version_num')::integer < 150000 then
    raise notice 'PostgreSQL before 15 has no GRANT SET ON PARAMETER; submit_runs keeps its foreign key checks';
  elsif not (select r.rolsuper from pg_catalog.pg_roles r where r.rolname = current_user) then
    raise notice 'not a superuser: pgflight_owner may not set session_replication_role, submit_runs keeps its foreign key checks';
  else
    execute 'grant set on parameter session_replication_role to pgflight_owner';
  end if;
end
$$;

commit;
