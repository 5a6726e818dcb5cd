-- Deploy pgflight:functions/retry_step
-- requires: functions/_lifecycle
begin;
set local role pgflight_owner;

-- Reopen a terminal step on a fresh queued attempt (attempt_no + 1, failed_attempts back to 0),
-- keeping every earlier attempt and event. Its ancestors are reopened with it so its result
-- reaches them: a parked ancestor counts one more pending child; a finished one gets a new
-- attempt parked in awaiting_children that the step's end will wake; the run runs again.
-- Errors: ZF006 when an ancestor is running (let it finish first).
create function pgflight._reopen_step(p_step_id bigint, p_actor text, p_reason text, p_note text)
returns bigint
language plpgsql volatile
set search_path = ''
as $$
declare
  v_now timestamptz := pgflight._now();
  v_step record;
  v_child bigint := null;
  v_id bigint := p_step_id;
  v_live record;
  v_new bigint;
  v_first bigint;
begin
  loop
    select s.* into v_step from pgflight.steps s where s.id = v_id for update;
    select a.id, a.status into v_live from pgflight.step_attempts a
     where a.step_id = v_id
       and a.status in ('queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children', 'awaiting_approval');
    if v_child is not null and v_live.status = 'awaiting_children' then
      update pgflight.steps set children_pending = children_pending + 1 where id = v_id;
      exit;
    elsif v_live.id is not null then
      raise exception using errcode = 'ZF006',
        message = format('step %s is %s', v_id, v_live.status),
        hint = case when v_child is null then 'Only a terminal step can be retried or replayed.'
                    else 'An ancestor is still running; retry after it ends.' end;
    end if;
    insert into pgflight.step_attempts (step_id, run_id, attempt_no, recipe, priority, status, available_after, created_at)
    values (v_id, v_step.run_id, v_step.last_attempt_no + 1, v_step.recipe, v_step.priority,
            case when v_child is null then 'queued' else 'awaiting_children' end, v_now, v_now)
    returning id into v_new;
    update pgflight.steps
       set last_attempt_no = last_attempt_no + 1,
           failed_attempts = case when v_child is null then 0 else failed_attempts end,
           children_pending = case when v_child is null then children_pending else 1 end
     where id = v_id;
    perform pgflight._event(v_step.run_id, v_id, v_new, null,
                            case when v_child is null then 'queued' else 'awaiting_children' end,
                            null, p_reason, p_actor,
                            jsonb_build_object('note', p_note, 'attempt_no', v_step.last_attempt_no + 1,
                                               'because_of_step', v_child));
    v_first := coalesce(v_first, v_new);
    if v_step.parent_id is null then
      update pgflight.runs set status = 'running', finished_at = null where id = v_step.run_id and status <> 'running';
      exit;
    end if;
    v_child := v_id;
    v_id := v_step.parent_id;
  end loop;
  perform pgflight._notify_ready();
  return v_first;
end
$$;
comment on function pgflight._reopen_step(bigint, text, text, text) is
  'Internal: new attempt for a terminal step, ancestors reopened to receive its result.';

-- Give a dead-lettered step a fresh attempt (its failure count starts again at zero).
-- Returns the new attempt id. Errors: ZF003 unknown step, ZF006 not dead-lettered.
create function pgflight.retry_step(p_step_id bigint, p_actor text default null, p_note text default null)
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

-- Run a finished step (succeeded, dead_letter or cancelled) again on a fresh attempt, and then
-- what depends on it: each ancestor runs again once the step ends. History stays. Returns the
-- new attempt id. Errors: ZF003 unknown step, ZF006 step not terminal or an ancestor running.
create function pgflight.replay_from(p_step_id bigint, p_actor text default null, p_note text default null)
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

grant execute on function pgflight.retry_step(bigint, text, text), pgflight.replay_from(bigint, text, text) to pgflight_operator;

commit;
