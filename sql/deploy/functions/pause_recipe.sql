-- Deploy pgflight:functions/pause_recipe
begin;
set local role pgflight_owner;

-- Pause a recipe: its queued work is not claimed until resume_recipe; attempts already leased
-- finish normally. Idempotent (pausing a paused recipe keeps the first pause's time and actor).
-- The events log records who paused (the session's login) and the note.
-- Returns true when this call changed the state. Errors: 22023 bad name.
create or replace function pgflight.pause_recipe(p_name text, p_note text default null)
returns boolean
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_changed boolean;
begin
  if p_name is null or btrim(p_name) = '' or length(p_name) > 200 then
    raise exception using errcode = '22023', message = 'recipe is required',
      hint = 'Pass a recipe name of at most 200 characters.';
  end if;
  if length(p_note) > 1000 then
    raise exception using errcode = '22023', message = 'note is too long',
      detail = format('%s characters; at most 1000', length(p_note));
  end if;
  insert into pgflight.recipe_limits (recipe) values (p_name) on conflict do nothing;
  update pgflight.recipe_limits l set paused_at = pgflight._now(), paused_by = session_user::text, updated_at = pgflight._now()
   where l.recipe = p_name and l.paused_at is null;
  v_changed := found;
  if v_changed then
    perform pgflight._event(null, null, null, null, null, null, 'recipe_paused', session_user::text,
                            jsonb_build_object('recipe', p_name, 'note', p_note));
  end if;
  return v_changed;
end
$$;
comment on function pgflight.pause_recipe(text, text) is
  'Pause a recipe''s claims (leased work finishes); logged with the login and note. Errors: 22023.';
revoke execute on function pgflight.pause_recipe(text, text) from public;
grant execute on function pgflight.pause_recipe(text, text) to pgflight_operator;

commit;
