-- Revert pgflight:roles/owner_replication_role
-- The grant is cluster-wide: another database of the cluster at this change or later then purges
-- by foreign-key cascade (slower, the same rows).
begin;

do $$
begin
  if (select rolsuper from pg_catalog.pg_roles where rolname = current_user) then
    revoke set on parameter session_replication_role from pgflight_owner;
  end if;
end
$$;

commit;
