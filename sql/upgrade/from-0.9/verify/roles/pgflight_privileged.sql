-- Verify pgflight:roles/pgflight_privileged
-- Nothing to require: a deploy by a non-superuser leaves the functions to the owner.
select 1;
