-- Deploy pgflight:functions/pause_workspace
begin;
set local role pgflight_owner;

-- Pause a workspace: its queued work is not claimed until resume_workspace; attempts already leased
-- finish normally. Idempotent (pausing a paused workspace keeps the first pause's time and actor).
-- The events log records who paused (the session's login) and the note.
-- Returns true when this call changed the state. Errors: 22023 bad name, ZF003 unknown workspace.
create or replace function pgflight.pause_workspace(p_name text, p_note text default null)
returns boolean
language sql volatile security definer
set search_path = pg_catalog, pg_temp
as $$ select pgflight._set_paused('workspace', p_name, true, p_note) $$;
comment on function pgflight.pause_workspace(text, text) is
  'Pause a workspace''s claims (leased work finishes); logged with the login and note. Errors: 22023, ZF003.';
revoke execute on function pgflight.pause_workspace(text, text) from public;
grant execute on function pgflight.pause_workspace(text, text) to pgflight_operator;

commit;
