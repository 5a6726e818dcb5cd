-- Deploy pgflight:functions/resume_recipe
begin;
set local role pgflight_owner;

-- Resume a paused recipe: its queued work is claimable again at once (workers are notified).
-- Idempotent. The events log records who resumed and the note.
-- Returns true when this call changed the state. Errors: 22023 bad name.
create or replace function pgflight.resume_recipe(p_name text, p_note text default null)
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
  update pgflight.recipe_limits l set paused_at = null, paused_by = null, updated_at = pgflight._now()
   where l.recipe = p_name and l.paused_at is not null;
  v_changed := found;
  if v_changed then
    perform pgflight._event(null, null, null, null, null, null, 'recipe_resumed', session_user::text,
                            jsonb_build_object('recipe', p_name, 'note', p_note));
    perform pgflight._notify_ready();
  end if;
  delete from pgflight.recipe_limits l where l.recipe = p_name and l.starts_per_s is null and l.paused_at is null;
  return v_changed;
end
$$;
comment on function pgflight.resume_recipe(text, text) is
  'Resume a recipe''s claims (leased work finishes); logged with the login and note. Errors: 22023.';
revoke execute on function pgflight.resume_recipe(text, text) from public;
grant execute on function pgflight.resume_recipe(text, text) to pgflight_operator;

commit;
