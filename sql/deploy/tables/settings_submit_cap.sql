-- Deploy pgflight:tables/settings_submit_cap
-- requires: tables/settings_caps
-- The cap of runs one submit_runs call may submit (issue 18; docs/security.md#caps): over it the
-- call raises ZF005 naming the column and writes nothing.
begin;
set local role pgflight_owner;

alter table pgflight.settings
  add column max_runs_per_call integer not null default 100000,
  add constraint max_runs_per_call_is_positive check (max_runs_per_call > 0);

comment on column pgflight.settings.max_runs_per_call is 'Cap of runs in one submit_runs call.';

commit;
