-- Revert pgflight:functions/cancel_run: restores the previous definition, deploy/functions/cancel_run@v0.2.0.sql (written by scripts/gen_sql_scripts.py)
begin;
set local role pgflight_owner;

-- Cancel a run: the run becomes cancelled and every live attempt in it stops. Queued and parked
-- attempts are cancelled at once; claimed and running ones become cancel_requested, their worker
-- hears 'cancelled' on its next heartbeat, and nothing can complete after this (invariant 7).
-- Cancelling a finished run is a no-op reported as such (was_running = false). Two cancels of one
-- run are serialised on the attempts' row locks. Errors: ZF003 unknown run.
create or replace function pgflight.cancel_run(p_run_id bigint, p_actor text default null, p_reason text default null)
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
grant execute on function pgflight.cancel_run(bigint, text, text) to pgflight_operator;

commit;
