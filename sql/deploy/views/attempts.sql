-- Deploy pgflight:views/attempts
-- Read-only views for operators and readers. They run with the owner's rights, so readers need
-- no table privileges.
begin;
set local role pgflight_owner;

-- Issue 13: a security_barrier view showing only the reading login's workspaces. The workspace
-- list is an initplan, computed once per query; null (every workspace: a single-tenant install,
-- the owner, a superuser) skips the filter row by row.
-- A fencing token is a capability: shown only on attempts held by the login's own workers.
create or replace view pgflight.attempts with (security_barrier) as
select a.id as attempt_id, a.step_id, a.run_id, a.attempt_no, a.recipe, a.status, a.worker_id,
       case when w.login = session_user then a.fencing_token end as fencing_token, a.claimed_at, a.started_at, a.lease_expires_at, a.deadline_at, a.finished_at,
       a.available_after, a.reason, a.error, a.result
  from pgflight.step_attempts a
  left join pgflight.workers w on w.id = a.worker_id
 where (select pgflight._lane_workspaces('reader')) is null
    or exists (select from pgflight.runs r where r.id = a.run_id
                  and r.workspace_id = any (coalesce((select pgflight._lane_workspaces('reader')), '{}')));
comment on view pgflight.attempts is 'Every attempt of the login''s workspaces, with its claim metadata (never cleared); the fencing token only on attempts of the login''s own workers.';
grant select on pgflight.attempts to pgflight_reader, pgflight_operator;

commit;
