-- Deploy pgflight:internals/_set_paused

begin;

set local role pgflight_owner;

-- Pause (p_pause) or resume a workspace (p_kind 'workspace') or a recipe ('recipe'): the body of
-- pause_workspace, resume_workspace, pause_recipe and resume_recipe. A change of state appends an
-- events row (<kind>_paused / <kind>_resumed) with the session's login as actor and the note; a
-- resume notifies idle workers. Returns true when the state changed.
-- Errors: 22023 blank or long recipe name, long note; ZF003 unknown workspace.
CREATE OR REPLACE FUNCTION pgflight._set_paused(p_kind text, p_name text, p_pause boolean, p_note text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint;
  v_changed boolean;
begin
  if length(p_note) > 1000 then
    raise exception using errcode = '22023', message = 'note is too long',
      detail = format('%s characters; at most 1000', length(p_note));
  end if;
  -- a workspace needs the operator lane on it; a recipe spans every workspace
  v_ws := case when p_kind = 'workspace' then pgflight._workspace_id(p_name) end;
  perform pgflight._require_lane('operator', v_ws,
                                 case when p_pause then 'pause_' else 'resume_' end || p_kind);
  if p_kind = 'workspace' then
    if p_pause then
      insert into pgflight.workspace_limits (workspace_id) values (v_ws) on conflict do nothing;
    end if;
    update pgflight.workspace_limits l
       set paused_at = case when p_pause then pgflight._now() end,
           paused_by = case when p_pause then session_user::text end,
           updated_at = pgflight._now()
     where l.workspace_id = v_ws and (l.paused_at is null) = p_pause;
    v_changed := found;
  else
    if p_name is null or btrim(p_name) = '' or length(p_name) > 200 then
      raise exception using errcode = '22023', message = 'recipe is required',
        hint = 'Pass a recipe name of at most 200 characters.';
    end if;
    if p_pause then
      insert into pgflight.recipe_limits (recipe) values (p_name) on conflict do nothing;
    end if;
    update pgflight.recipe_limits l
       set paused_at = case when p_pause then pgflight._now() end,
           paused_by = case when p_pause then session_user::text end,
           updated_at = pgflight._now()
     where l.recipe = p_name and (l.paused_at is null) = p_pause;
    v_changed := found;
    -- a row with no limit and no pause is removed: the claim then skips the recipe checks entirely
    delete from pgflight.recipe_limits l where l.recipe = p_name and l.starts_per_s is null and l.paused_at is null;
  end if;
  if v_changed then
    perform pgflight._event(null, null, null, null, null, null,
                            p_kind || case when p_pause then '_paused' else '_resumed' end, session_user::text,
                            jsonb_build_object(p_kind, p_name, 'note', p_note));
    if not p_pause then
      perform pgflight._notify_ready();
    end if;
  end if;
  return v_changed;
end
$$;

COMMENT ON FUNCTION pgflight._set_paused(p_kind text, p_name text, p_pause boolean, p_note text) IS 'Internal: pause or resume a workspace or recipe, logged with the login and note; true when the state changed.';

REVOKE ALL ON FUNCTION pgflight._set_paused(p_kind text, p_name text, p_pause boolean, p_note text) FROM PUBLIC;

commit;
