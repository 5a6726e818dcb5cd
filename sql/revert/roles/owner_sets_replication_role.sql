-- Revert pgflight:roles/owner_sets_replication_role
-- Cluster-wide: a pgflight of another database of the cluster then keeps its foreign key checks
-- in submit_runs too (slower, never wrong) until it is deployed again.
begin;

do $$
begin
  if pg_catalog.current_setting('server_version_num')::integer >= 150000
     and (select r.rolsuper from pg_catalog.pg_roles r where r.rolname = current_user) then
    execute 'revoke set on parameter session_replication_role from pgflight_owner';
  end if;
end
$$;

commit;
