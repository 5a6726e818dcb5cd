-- Deploy pgflight:functions/cancel_run
-- requires: functions/_lifecycle
begin;
set local role pgflight_owner;

-- Cancel a run: the run becomes cancelled and every live attempt in it stops. Queued and parked
-- attempts are cancelled at once; claimed and running ones become cancel_requested, their worker
-- hears 'cancelled' on its next heartbeat, and nothing can complete after this (invariant 7).
-- Cancelling a finished run is a no-op reported as such (was_running = false). Two cancels of one
-- run are serialised on the attempts' row locks. Errors: ZF003 unknown run.
create function pgflight.cancel_run(p_run_id bigint, p_actor text default null, p_reason text default null)
returns table (run_id bigint, was_running boolean, cancelled integer, cancel_requested integer)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_status text;
  v_c integer;
  v_r integer;
begin
  select r.status into v_status from pgflight.runs r where r.id = p_run_id;
  if not found then
    raise exception using errcode = 'ZF003', message = format('unknown run %s', p_run_id);
  end if;
  if v_status <> 'running' then
    return query select p_run_id, false, 0, 0;
    return;
  end if;
  -- Attempts first, then the run row: the order a completing root takes (its attempt, then the
  -- run), so a cancel racing a completion cannot deadlock with it.
  select t.cancelled, t.cancel_requested into v_c, v_r
    from pgflight._cancel_tree(p_run_id, null, coalesce(p_actor, session_user::text), p_reason) t;
  update pgflight.runs set status = 'cancelled', finished_at = pgflight._now()
   where id = p_run_id and status = 'running';
  if not found then
    -- the run ended (its root completed) before we got here: the cancel is a no-op
    return query select p_run_id, false, v_c, v_r;
    return;
  end if;
  perform pgflight._event(p_run_id, null, null, 'running', 'cancelled', null, 'run_cancelled',
                          coalesce(p_actor, session_user::text),
                          jsonb_build_object('note', p_reason, 'cancelled', v_c, 'cancel_requested', v_r));
  return query select p_run_id, true, v_c, v_r;
end
$$;
comment on function pgflight.cancel_run(bigint, text, text) is
  'Cancel a run and every live attempt in it. Returns counts. Errors: ZF003 unknown run.';

-- Cancel one step and its whole subtree. The parent of the subtree is poked once the subtree
-- root is terminal, so a parent waiting on it wakes. Cancelling the root step cancels the run.
-- Errors: ZF003 unknown step.
create function pgflight.cancel_step(p_step_id bigint, p_actor text default null, p_reason text default null)
returns table (step_id bigint, cancelled integer, cancel_requested integer)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_step record;
  v_c integer;
  v_r integer;
  v_root_status text;
begin
  select s.id, s.run_id, s.parent_id into v_step from pgflight.steps s where s.id = p_step_id;
  if not found then
    raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
  end if;
  if v_step.parent_id is null then
    return query select p_step_id, c.cancelled, c.cancel_requested
      from pgflight.cancel_run(v_step.run_id, p_actor, p_reason) c;
    return;
  end if;
  select a.status into v_root_status from pgflight.step_attempts a
   where a.step_id = p_step_id
     and a.status in ('queued', 'claimed', 'running', 'awaiting_children', 'awaiting_approval');
  select t.cancelled, t.cancel_requested into v_c, v_r
    from pgflight._cancel_tree(v_step.run_id, p_step_id, coalesce(p_actor, session_user::text), p_reason) t;
  -- the subtree root ended now (it was queued or parked, not leased): tell its parent
  if v_root_status in ('queued', 'awaiting_children', 'awaiting_approval') then
    perform pgflight._step_finished(p_step_id, 'cancelled', coalesce(p_actor, session_user::text));
  end if;
  return query select p_step_id, v_c, v_r;
end
$$;
comment on function pgflight.cancel_step(bigint, text, text) is
  'Cancel a step and its subtree; pokes its parent. Errors: ZF003 unknown step.';

grant execute on function pgflight.cancel_run(bigint, text, text), pgflight.cancel_step(bigint, text, text) to pgflight_operator;

commit;
