-- Revert pgflight:tables/agent_forks
begin;
set local role pgflight_owner;

alter table pgflight.costs drop constraint reused_costs_nothing, drop column reused;
alter table pgflight.agent_runs
  drop constraint fork_names_its_origin_and_iteration,
  drop column forked_at,
  drop column forked_from;

commit;
