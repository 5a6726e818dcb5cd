-- Revert pgflight:views/run_list: restores the previous definition, deploy/views/run_list@v0.2.0.sql (written by scripts/gen_sql_scripts.py)
-- Read-only views for operators and readers. They run with the owner's rights, so readers need
-- no table privileges.
begin;
set local role pgflight_owner;

create or replace view pgflight.run_list as
select r.id as run_id, w.name as workspace, r.recipe, r.status, r.idempotency_key, r.submitted_by,
       r.created_at, r.finished_at
  from pgflight.runs r join pgflight.workspaces w on w.id = r.workspace_id;
comment on view pgflight.run_list is 'Runs with their workspace name.';
grant select on pgflight.run_list to pgflight_reader, pgflight_operator;

commit;
