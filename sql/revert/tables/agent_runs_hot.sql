-- Revert pgflight:tables/agent_runs_hot
begin;
set local role pgflight_owner;

update pgflight.agent_runs set reserved_attempt_id = null where reserved_iteration is null;
alter table pgflight.agent_runs drop constraint reservation_is_whole;
alter table pgflight.agent_runs add constraint reservation_is_whole
  check ((reserved_attempt_id is null) = (reserved_usd = 0 and reserved_iteration is null));
alter table pgflight.agent_runs reset (fillfactor);
comment on column pgflight.agent_runs.reserved_attempt_id is null;

commit;
