-- Deploy pgflight:roles/owner_replication_role
-- requires: roles
-- Issue 18 (retention): pgflight_owner may SET session_replication_role, which purge_finished sets
-- to replica (local to its own call) while it deletes a batch of finished runs child table by
-- child table. A foreign key's ON DELETE CASCADE runs one trigger query per deleted row and key:
-- nine for a one-step run, most of a purge's time. In replica mode those triggers do not fire;
-- purge_finished deletes every referencing row itself, after locking the parents, so the keys
-- still hold (functions/purge_finished says why). Every other path keeps its foreign-key checks and
-- cascades.
-- PostgreSQL 15's GRANT SET ON PARAMETER; only a superuser can grant it on this parameter. A
-- deploying role that is not one gets a NOTICE, and purge_finished deletes by cascade as before.
-- The grant is cluster-wide, like the roles.
begin;

do $$
begin
  if (select rolsuper from pg_catalog.pg_roles where rolname = current_user) then
    grant set on parameter session_replication_role to pgflight_owner;
  else
    raise notice 'not a superuser: pgflight_owner may not set session_replication_role, so purge_finished '
                 'deletes finished runs by foreign-key cascade (slower; the same rows go)';
  end if;
end
$$;

commit;
