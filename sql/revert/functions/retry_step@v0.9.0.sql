-- Revert pgflight:functions/retry_step@v0.9.0: restores the previous definition, deploy/functions/retry_step@v0.2.0.sql (written by scripts/gen_sql_scripts.py)
begin;
set local role pgflight_owner;

-- Give a dead-lettered step a fresh attempt (its failure count starts again at zero).
-- Returns the new attempt id. Errors: ZF003 unknown step, ZF006 not dead-lettered.
create or replace function pgflight.retry_step(p_step_id bigint, p_actor text default null, p_note text default null)
returns bigint
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_status text;
begin
  select a.status into v_status from pgflight.steps s
    join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
   where s.id = p_step_id;
  if not found then
    raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
  end if;
  if v_status <> 'dead_letter' then
    raise exception using errcode = 'ZF006', message = format('step %s is %s, not dead_letter', p_step_id, v_status),
      hint = 'retry_step is for dead letters; use replay_from to run a finished step again.';
  end if;
  return pgflight._reopen_step(p_step_id, coalesce(p_actor, session_user::text), 'retried', p_note);
end
$$;
comment on function pgflight.retry_step(bigint, text, text) is
  'Fresh attempt for a dead-lettered step; returns the attempt id. Errors: ZF003, ZF006.';
grant execute on function pgflight.retry_step(bigint, text, text) to pgflight_operator;

commit;
