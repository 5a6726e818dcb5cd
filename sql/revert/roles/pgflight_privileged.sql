-- Revert pgflight:roles/pgflight_privileged
-- The functions go back to pgflight_owner. The role and
-- the privileges are cluster-wide: only when no other database of the cluster still has objects
-- owned by pgflight_privileged does the owner get back what the earlier changes gave it
-- (internals/_health, roles/owner_sets_replication_role) and the role go; otherwise the other
-- databases keep their SET on session_replication_role, and this one's functions run without it
-- (the bulk writes keep their checks) until reverted on. pg_read_all_stats is granted back to
-- pgflight_owner by the revert of internals/_health that follows (its previous instance's
-- _vacuum_horizon, owned by pgflight_owner, needs it): a database reverted below this change gives
-- the deploy login that privilege again, as that older version did.
begin;

do $$
declare
  v_fn text;
begin
  if not exists (select from pg_catalog.pg_roles r where r.rolname = 'pgflight_privileged')
     or not coalesce((select r.rolsuper from pg_catalog.pg_roles r where r.rolname = current_user), false) then
    return;
  end if;
  foreach v_fn in array array['pgflight._vacuum_horizon()', 'pgflight._backend_started_at(integer)',
                              'pgflight._row_triggers_off()', 'pgflight._row_triggers_on(text)'] loop
    execute format('alter function %s owner to pgflight_owner', v_fn);
  end loop;
  if exists (select from pg_catalog.pg_shdepend d
               join pg_catalog.pg_database db on db.oid = d.dbid
              where d.refclassid = 'pg_catalog.pg_authid'::regclass and d.deptype = 'o'
                and d.refobjid = (select r.oid from pg_catalog.pg_roles r where r.rolname = 'pgflight_privileged')
                and db.datname <> pg_catalog.current_database()) then
    raise notice 'pgflight_privileged still owns objects in another database of this cluster; kept';
    return;
  end if;
  grant pg_read_all_stats to pgflight_owner;
  if pg_catalog.current_setting('server_version_num')::integer >= 150000 then
    execute 'grant set on parameter session_replication_role to pgflight_owner';
    execute 'revoke set on parameter session_replication_role from pgflight_privileged';
  end if;
  revoke pg_read_all_stats from pgflight_privileged;
  drop role pgflight_privileged;
end
$$;

commit;
