-- Deploy pgflight:functions/resume_workspace
begin;
set local role pgflight_owner;

-- Resume a paused workspace: its queued work is claimable again at once (workers are notified).
-- Idempotent. The events log records who resumed and the note.
-- Returns true when this call changed the state. Errors: 22023 bad name, ZF003 unknown workspace.
create or replace function pgflight.resume_workspace(p_name text, p_note text default null)
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
  update pgflight.workspace_limits l set paused_at = null, paused_by = null, updated_at = pgflight._now()
   where l.workspace_id = v_ws and l.paused_at is not null;
  v_changed := found;
  if v_changed then
    perform pgflight._event(null, null, null, null, null, null, 'workspace_resumed', session_user::text,
                            jsonb_build_object('workspace', p_name, 'note', p_note));
    perform pgflight._notify_ready();
  end if;
  return v_changed;
end
$$;
comment on function pgflight.resume_workspace(text, text) is
  'Resume a workspace''s claims (leased work finishes); logged with the login and note. Errors: 22023, ZF003.';
revoke execute on function pgflight.resume_workspace(text, text) from public;
grant execute on function pgflight.resume_workspace(text, text) to pgflight_operator;

commit;
