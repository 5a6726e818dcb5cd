-- Revert pgflight:views/run_events@v0.5.0: restores the previous definition, deploy/views/run_events@v0.3.0.sql (written by scripts/gen_sql_scripts.py)
-- Read-only views for operators and readers. They run with the owner's rights, so readers need
-- no table privileges.
begin;
set local role pgflight_owner;
drop view pgflight.run_events;

-- Issue 13: a security_barrier view showing only the reading login's workspaces. The workspace
-- list is an initplan, computed once per query; null (every workspace: a single-tenant install,
-- the owner, a superuser) skips the filter row by row.
create or replace view pgflight.run_events with (security_barrier) as
select e.id, e.at, e.run_id, e.step_id, e.attempt_id, e.from_status, e.to_status, e.worker_id,
       e.actor, e.reason, e.detail
  from pgflight.events e
 where (select pgflight._lane_workspaces('reader')) is null
    or exists (select from pgflight.runs r where r.id = e.run_id
                  and r.workspace_id = any (coalesce((select pgflight._lane_workspaces('reader')), '{}')));
comment on view pgflight.run_events is 'The transition log.';
grant select on pgflight.run_events to pgflight_reader, pgflight_operator;

commit;
