-- Revert pgflight:roles/pgflight_cron
-- Dropped only when no other database of the cluster still uses it.
begin;

do $$
begin
  drop role if exists pgflight_cron;
exception when dependent_objects_still_exist then
  raise notice 'role pgflight_cron is still used elsewhere in this cluster; kept';
end
$$;

commit;
