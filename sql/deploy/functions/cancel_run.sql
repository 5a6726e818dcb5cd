-- Deploy pgflight:functions/cancel_run

begin;

set local role pgflight_owner;

-- Cancel a run: the run becomes cancelled and every live attempt in it stops. Queued and parked
-- attempts are cancelled at once; claimed and running ones become cancel_requested, their worker
-- hears 'cancelled' on its next heartbeat, and nothing can complete after this (invariant 7).
-- Cancelling a finished run is a no-op reported as such (was_running = false). Two cancels of one
-- run are serialised on the attempts' row locks. Errors: ZF003 unknown run.
CREATE OR REPLACE FUNCTION pgflight.cancel_run(p_run_id bigint, p_actor text DEFAULT NULL::text, p_reason text DEFAULT NULL::text) RETURNS TABLE(run_id bigint, was_running boolean, cancelled integer, cancel_requested integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_status text;
  v_c integer;
  v_r integer;
begin
  perform pgflight._require_lane_on_run('operator', p_run_id, 'cancel_run');  -- tenants
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
    from pgflight._cancel_tree(p_run_id, null, session_user::text, pgflight._actor_note(p_reason, p_actor)) t;
  update pgflight.runs set status = 'cancelled', finished_at = pgflight._now()
   where id = p_run_id and status = 'running';
  if not found then
    -- the run ended (its root completed) before we got here: the cancel is a no-op
    return query select p_run_id, false, v_c, v_r;
    return;
  end if;
  perform pgflight._event(p_run_id, null, null, 'running', 'cancelled', null, 'run_cancelled',
                          session_user::text,
                          jsonb_build_object('note', pgflight._actor_note(p_reason, p_actor), 'cancelled', v_c, 'cancel_requested', v_r));
  return query select p_run_id, true, v_c, v_r;
end
$$;

COMMENT ON FUNCTION pgflight.cancel_run(p_run_id bigint, p_actor text, p_reason text) IS 'Cancel a run and every live attempt in it. Returns counts. Errors: ZF003 unknown run.';

REVOKE ALL ON FUNCTION pgflight.cancel_run(p_run_id bigint, p_actor text, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.cancel_run(p_run_id bigint, p_actor text, p_reason text) TO pgflight_operator;

commit;
