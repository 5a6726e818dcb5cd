-- Deploy pgflight:functions/resume_workspace
begin;
set local role pgflight_owner;

-- Resume a paused workspace: its queued work is claimable again at once (workers are notified).
-- Idempotent. The events log records who resumed and the note.
-- Returns true when this call changed the state. Errors: 22023 bad name, ZF003 unknown workspace.
create or replace function pgflight.resume_workspace(p_name text, p_note text default null)
returns boolean
language sql volatile security definer
set search_path = pg_catalog, pg_temp
as $$ select pgflight._set_paused('workspace', p_name, false, p_note) $$;
comment on function pgflight.resume_workspace(text, text) is
  'Resume a workspace''s claims (leased work finishes); logged with the login and note. Errors: 22023, ZF003.';
revoke execute on function pgflight.resume_workspace(text, text) from public;
grant execute on function pgflight.resume_workspace(text, text) to pgflight_operator;

commit;
