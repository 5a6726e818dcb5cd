-- Revert pgflight:functions/replay_from@v0.9.0: restores the previous definition, deploy/functions/replay_from@v0.2.0.sql (written by scripts/gen_sql_scripts.py)
begin;
set local role pgflight_owner;

-- Run a finished step (succeeded, dead_letter or cancelled) again on a fresh attempt, and then
-- what depends on it: each ancestor runs again once the step ends. History stays. Returns the
-- new attempt id. Errors: ZF003 unknown step, ZF006 step not terminal or an ancestor running.
create or replace function pgflight.replay_from(p_step_id bigint, p_actor text default null, p_note text default null)
returns bigint
language plpgsql volatile security definer
set search_path = ''
as $$
begin
  if not exists (select from pgflight.steps s where s.id = p_step_id) then
    raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
  end if;
  return pgflight._reopen_step(p_step_id, coalesce(p_actor, session_user::text), 'replayed', p_note);
end
$$;
comment on function pgflight.replay_from(bigint, text, text) is
  'Run a terminal step again and then its ancestors; returns the attempt id. Errors: ZF003, ZF006.';
grant execute on function pgflight.replay_from(bigint, text, text) to pgflight_operator;

commit;
