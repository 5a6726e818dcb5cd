-- Deploy pgflight:roles
-- The four pgflight roles. Roles are cluster-wide, so creation is idempotent: a second database in
-- the same cluster deploys cleanly and reuses them.
--   pgflight_owner    owns every object; never logs in.
--   pgflight_worker   EXECUTE on the worker API only; no table privileges.
--   pgflight_operator submits, cancels, approves, retries; also reads the views.
--   pgflight_reader   reads the views only.
begin;

do $$
declare
  v_role text;
begin
  foreach v_role in array array['pgflight_owner', 'pgflight_worker', 'pgflight_operator', 'pgflight_reader'] loop
    if not exists (select from pg_catalog.pg_roles where rolname = v_role) then
      execute format('create role %I nologin', v_role);
    end if;
  end loop;
  -- The deploying role must be able to act as the owner (a superuser already can).
  if not (select rolsuper from pg_catalog.pg_roles where rolname = current_user) then
    execute format('grant pgflight_owner to %I', current_user);
  end if;
end
$$;

commit;
