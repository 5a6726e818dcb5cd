-- Revert pgflight:tables/settings_submit_cap
begin;
set local role pgflight_owner;

alter table pgflight.settings drop constraint max_runs_per_call_is_positive, drop column max_runs_per_call;

commit;
