-- Verify pgflight:roles/owner_sets_replication_role
-- Nothing to require: without the grant (a deploy by a non-superuser) submit_runs keeps its checks.
select 1;
