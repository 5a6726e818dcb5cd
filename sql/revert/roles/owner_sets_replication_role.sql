-- Revert pgflight:roles/owner_sets_replication_role
-- Parameter privileges are cluster-wide, like roles: revoke only when no other database of the
-- cluster still has objects owned by pgflight_owner (pg_shdepend, what roles' revert relies on to
-- keep a role in use). Revoking under another database's pgflight would switch its submit_runs
-- and purge_finished back to their foreign key checks mid-flight (slower, never wrong; a test
-- of the large call's lock-free writes saw it happen while another test reverted a database).
begin;

do $$
begin
  if pg_catalog.current_setting('server_version_num')::integer >= 150000
     and (select r.rolsuper from pg_catalog.pg_roles r where r.rolname = current_user) then
    if exists (select from pg_catalog.pg_shdepend d
                 join pg_catalog.pg_database db on db.oid = d.dbid
                where d.refclassid = 'pg_catalog.pg_authid'::regclass
                  and d.refobjid = (select r.oid from pg_catalog.pg_roles r where r.rolname = 'pgflight_owner')
                  and db.datname <> pg_catalog.current_database()) then
      raise notice 'pgflight_owner still owns objects in another database of this cluster: it keeps SET on session_replication_role';
    else
      execute 'revoke set on parameter session_replication_role from pgflight_owner';
    end if;
  end if;
end
$$;

commit;
