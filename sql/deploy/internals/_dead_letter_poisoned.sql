-- Deploy pgflight:internals/_dead_letter_poisoned

begin;

set local role pgflight_owner;

-- The last resort of a sweep: a row whose processing raised is ended on its own —
-- dead letter with the real error (SQLSTATE and message) and an events row — so the sweep goes on
-- with the rest. If even that raises (the cascade of the dead letter is what fails), the attempt
-- is dead-lettered without the cascade; if that fails too, it is left as it is, with a WARNING.
-- Lock order (docs/locking.md): the dead letter ends the step, and that end may cancel a subtree
-- (a waiting fail-fast ancestor's, or its own children's), so that subtree's live attempts are
-- locked first, NOWAIT, before any steps row (_lock_cascade), as every other end does: the
-- caller's block that raised gave back the locks it had taken. A subtree in use (55P03) leaves the
-- row as it is, still leased, for the next pass, without a warning. Before, the cascade locked the
-- siblings' attempts after the parent's steps row, against a sibling's completion (its attempt,
-- then that row): 40P01, caught here, and the parent was never told of its child's end.
CREATE OR REPLACE FUNCTION pgflight._dead_letter_poisoned(p_attempt_id bigint, p_sqlstate text, p_message text, p_actor text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_att record;
  v_error jsonb := jsonb_build_object('message', 'the engine could not process this attempt: ' || p_message,
                                      'sqlstate', p_sqlstate);
begin
  begin
    perform pgflight._lock_cascade(p_attempt_id, true);
    update pgflight.step_attempts a
       set status = 'dead_letter', finished_at = pgflight._now(), reason = 'engine_error', error = v_error
      from pgflight.step_attempts prev
     where a.id = p_attempt_id and prev.id = a.id
       and a.status in ('claimed', 'running', 'cancel_requested')
    returning a.run_id, a.step_id, a.worker_id, prev.status as old_status into v_att;
    if found then
      perform pgflight._event(v_att.run_id, v_att.step_id, p_attempt_id, v_att.old_status, 'dead_letter',
                              v_att.worker_id, 'engine_error', p_actor, v_error);
      begin
        perform pgflight._step_finished(v_att.step_id, 'dead_letter', p_actor);
      exception when others then
        raise warning 'pgflight: attempt % dead-lettered, its parent not told: % (%)', p_attempt_id, sqlerrm, sqlstate;
      end;
    end if;
  exception
    when lock_not_available then
      null;  -- its subtree is in use: the row stays leased, the next pass takes it again
    when others then
      raise warning 'pgflight: attempt % could not be processed nor dead-lettered: % (%)', p_attempt_id, sqlerrm, sqlstate;
  end;
end
$$;

COMMENT ON FUNCTION pgflight._dead_letter_poisoned(p_attempt_id bigint, p_sqlstate text, p_message text, p_actor text) IS 'Internal: a sweep''s last resort: dead-letter one attempt with the error that stopped it, its cascade''s attempts locked first NOWAIT (a subtree in use leaves the row for the next pass), and go on.';

REVOKE ALL ON FUNCTION pgflight._dead_letter_poisoned(p_attempt_id bigint, p_sqlstate text, p_message text, p_actor text) FROM PUBLIC;

commit;
