-- Deploy pgflight:roles/pgflight_cron
-- requires: roles
-- The role pg_cron runs pgflight's jobs as. Not a superuser and not a member of the
-- owner, so a job never runs owner-controlled code with more rights than the owner has. LOGIN
-- because pg_cron cannot start a job as a NOLOGIN role (background worker or libpq alike); no
-- password: pg_cron reaches the server through background workers or the unix socket (see
-- docs/security.md). A member of pgflight_operator for EXECUTE on the sweeps; its every-workspace
-- operator grant is given with the workspace_grants table. Cluster-wide, so created idempotently.
begin;

do $$
begin
  if not exists (select from pg_catalog.pg_roles where rolname = 'pgflight_cron') then
    create role pgflight_cron login nosuperuser nocreatedb nocreaterole noreplication nobypassrls;
  end if;
end
$$;
grant pgflight_operator to pgflight_cron;

commit;
