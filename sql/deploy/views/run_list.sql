-- Deploy pgflight:views/run_list
-- Read-only views for operators and readers. They run with the owner's rights, so readers need
-- no table privileges.
begin;
set local role pgflight_owner;

-- Issue 13: a security_barrier view showing only the reading login's workspaces. The workspace
-- list is an initplan, computed once per query; null (every workspace: a single-tenant install,
-- the owner, a superuser) skips the filter row by row.
create or replace view pgflight.run_list with (security_barrier) as
select r.id as run_id, w.name as workspace, r.recipe, r.status, r.idempotency_key, r.submitted_by,
       r.created_at, r.finished_at
  from pgflight.runs r join pgflight.workspaces w on w.id = r.workspace_id
 where (select pgflight._lane_workspaces('reader')) is null
    or r.workspace_id = any (coalesce((select pgflight._lane_workspaces('reader')), '{}'));
comment on view pgflight.run_list is 'Runs with their workspace name.';
grant select on pgflight.run_list to pgflight_reader, pgflight_operator;

commit;
