-- Deploy pgflight:internals/_reopen_step

begin;

set local role pgflight_owner;

-- Reopen a terminal step on a fresh queued attempt (attempt_no + 1, failed_attempts back to 0),
-- keeping every earlier attempt and event. Its ancestors are reopened with it so its result
-- reaches them: a parked ancestor counts one more pending child; a finished one gets a new
-- attempt parked in awaiting_children that the step's end will wake; the run runs again.
-- Errors: ZF006 when an ancestor is running (let it finish first).
-- Lock order (docs/locking.md): the new attempts are created in the subtree of the nearest
-- ancestor that is still live (parked in awaiting_children), which a fail-fast cascade may be
-- ending right now. A cascade holds that ancestor's attempt FOR UPDATE from its first lock
-- (_lock_subtree) to its commit, so the reopen takes it FOR KEY SHARE before any steps row: it
-- waits for a cascade under way with no steps row held (and then finds the ancestor ended and
-- reopens it too), or the cascade waits for the reopen's commit and its re-read then finds the
-- new attempt. KEY SHARE waits for no wake and no status change (those take FOR NO KEY UPDATE).
-- Before, a cascade that had locked the subtree cancelled the new attempt later, after the
-- parent's steps row, against that attempt's completion (its attempt, then the parent's row):
-- 40P01.
CREATE OR REPLACE FUNCTION pgflight._reopen_step(p_step_id bigint, p_actor text, p_reason text, p_note text) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_step record;
  v_child bigint := null;
  v_id bigint := p_step_id;
  v_live record;
  v_new bigint;
  v_first bigint;
  v_anc record;
begin
  -- the nearest live ancestor's parked attempt, FOR KEY SHARE, read again after the lock (a
  -- cascade this waited for ended it: the next live ancestor up is the one, if any)
  loop
    with recursive up as (
      select s.parent_id as id, 1 as d from pgflight.steps s where s.id = p_step_id
      union all
      select s.parent_id, up.d + 1 from pgflight.steps s join up on s.id = up.id
    )
    select a.id, a.status into v_anc
      from up join pgflight.step_attempts a on a.step_id = up.id
     where a.status in ('queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children', 'awaiting_approval')
     order by up.d
     limit 1;
    exit when v_anc.id is null or v_anc.status <> 'awaiting_children';
    perform from pgflight.step_attempts a where a.id = v_anc.id for key share of a;
    exit when exists (select from pgflight.step_attempts a where a.id = v_anc.id and a.status = 'awaiting_children');
  end loop;
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

COMMENT ON FUNCTION pgflight._reopen_step(p_step_id bigint, p_actor text, p_reason text, p_note text) IS 'Internal: new attempt for a terminal step, ancestors reopened to receive its result.';

REVOKE ALL ON FUNCTION pgflight._reopen_step(p_step_id bigint, p_actor text, p_reason text, p_note text) FROM PUBLIC;

commit;
