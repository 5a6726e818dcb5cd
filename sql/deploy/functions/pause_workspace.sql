-- Deploy pgflight:functions/pause_workspace
begin;
set local role pgflight_owner;

-- Pause a workspace: its queued work is not claimed until resume_workspace; attempts already leased
-- finish normally. Idempotent (pausing a paused workspace keeps the first pause's time and actor).
-- The events log records who paused (the session's login) and the note.
-- Returns true when this call changed the state. Errors: 22023 bad name, ZF003 unknown workspace.
create or replace function pgflight.pause_workspace(p_name text, p_note text default null)
returns boolean
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_ws bigint := pgflight._workspace_id(p_name);
  v_changed boolean;
begin
  if length(p_note) > 1000 then
    raise exception using errcode = '22023', message = 'note is too long',
      detail = format('%s characters; at most 1000', length(p_note));
  end if;
  insert into pgflight.workspace_limits (workspace_id) values (v_ws) on conflict do nothing;
  update pgflight.workspace_limits l set paused_at = pgflight._now(), paused_by = session_user::text, updated_at = pgflight._now()
   where l.workspace_id = v_ws and l.paused_at is null;
  v_changed := found;
  if v_changed then
    perform pgflight._event(null, null, null, null, null, null, 'workspace_paused', session_user::text,
                            jsonb_build_object('workspace', p_name, 'note', p_note));
  end if;
  return v_changed;
end
$$;
comment on function pgflight.pause_workspace(text, text) is
  'Pause a workspace''s claims (leased work finishes); logged with the login and note. Errors: 22023, ZF003.';
revoke execute on function pgflight.pause_workspace(text, text) from public;
grant execute on function pgflight.pause_workspace(text, text) to pgflight_operator;

commit;
