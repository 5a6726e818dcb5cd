-- Deploy pgflight:internals/_steps_finished

begin;

set local role pgflight_owner;

-- The one place where a step's end has consequences: the hook of every terminal transition of
-- a set of steps (complete, fail, reclaim, deadline, cancel, budget, gate), in the transaction
-- that makes them, p_finals[i] being how p_step_ids[i] ended (succeeded, dead_letter,
-- cancelled). A rule about what follows a step's end is written here once:
--   1. a step that ended unsuccessfully cancels what it left running below it (C18);
--   2. each child pokes its parent (_fan_in_poke): its count is taken from a stripe of the
--      parent's counter, and only a stripe that runs dry decrements the parent's O(1) counter,
--      under the parent's row lock (parents in id order), so of two last children ending
--      together exactly one transaction sees zero (C17);
--   3. a fail-fast parent of a child that ended unsuccessfully is dead-lettered (and its own
--      end goes through here again); otherwise a parent whose counter reached zero wakes, once;
--   4. a root ends its run.
-- Locks: after the finished attempts (the caller's), the parents' counter stripes, parent steps in
-- id order, then their parked attempts, then runs: the order of docs/locking.md.
-- Plans: no sequential scan (a plan made while steps was small hash-joined the whole
-- table per batch). Its own two common statements on generic plans (their custom plans were made
-- again on every call: 0.28 ms of each complete_batch); when a step left work below it or has a
-- parent, plan_cache_mode goes back to auto until it returns, so what runs below (a whole tree's
-- cancel, fan-in pokes, wakes) is planned for its arrays' sizes.
CREATE OR REPLACE FUNCTION pgflight._steps_finished(p_step_ids bigint[], p_finals text[], p_actor text, p_now timestamp with time zone) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    AS $$
declare
  v_left record;
  v_doomed bigint[];
  v_wake bigint[];
  v_parent bigint;
  v_child bigint;
  v_parent_attempt record;
  v_final text;
  v_cancel_below boolean;
  v_has_parent boolean;
  v_runs bigint[];
  v_run_finals text[];
begin
  -- one read of the finished steps, by primary key, says which of 1-3 can have work and
  -- which roots end their runs; a batch of successful roots (the common case) runs only 4. (Written
  -- as one join with runs, the planner started from the running run and read every step of it:
  -- 20,000 rows on each batch of a 20,000-child fan-out, bench/fanout_bench.py.)
  select coalesce(bool_or(f.final <> 'succeeded' and s.children_pending > 0), false),
         coalesce(bool_or(s.parent_id is not null), false),
         array_agg(s.run_id) filter (where s.parent_id is null),
         array_agg(f.final) filter (where s.parent_id is null)
    into v_cancel_below, v_has_parent, v_runs, v_run_finals
    from unnest(p_step_ids, p_finals) as f(id, final) join pgflight.steps s on s.id = f.id;
  if v_cancel_below or v_has_parent then
    -- (SET LOCAL of a setting the function's SET clause names ends with the function)
    perform pg_catalog.set_config('plan_cache_mode', 'auto', true);
  end if;

  -- 1. what an unsuccessful step left running below it
  if v_cancel_below then
    for v_left in
      select s.id, s.run_id, f.final
        from unnest(p_step_ids, p_finals) as f(id, final) join pgflight.steps s on s.id = f.id
       where f.final <> 'succeeded' and s.children_pending > 0
       order by s.id
    loop
      perform pgflight._cancel_tree(v_left.run_id, v_left.id, coalesce(p_actor, 'engine'), 'parent ended ' || v_left.final);
      perform pgflight._fan_in_clear(v_left.id);
    end loop;
  end if;

  if v_has_parent then
    -- 2. the pokes, through the striped fan-in counter (internals/_fan_in)
    select array_agg(k.id order by k.id) filter (where k.failed and k.fail_fast),
           array_agg(k.id order by k.id) filter (where not (k.failed and k.fail_fast) and k.children_pending = 0)
      into v_doomed, v_wake
      from pgflight._fan_in_poke(p_step_ids, p_finals) k;

    -- 3. fail fast, else the wake
    if v_doomed is not null then
      foreach v_parent in array v_doomed loop
        select a.* into v_parent_attempt from pgflight.step_attempts a
         where a.step_id = v_parent and a.status = 'awaiting_children' for update;
        if found then
          select min(f.id) into v_child
            from unnest(p_step_ids, p_finals) as f(id, final) join pgflight.steps s on s.id = f.id
           where s.parent_id = v_parent and f.final <> 'succeeded';
          select f.final into v_final from unnest(p_step_ids, p_finals) as f(id, final) where f.id = v_child;
          update pgflight.step_attempts
             set status = 'dead_letter', finished_at = p_now, reason = 'child_failed',
                 error = jsonb_build_object('message', 'a child step ended ' || v_final, 'child_step_id', v_child)
           where id = v_parent_attempt.id;
          perform pgflight._event(v_parent_attempt.run_id, v_parent, v_parent_attempt.id,
                                  'awaiting_children', 'dead_letter', null, 'child_failed', p_actor,
                                  jsonb_build_object('child_step_id', v_child));
          perform pgflight._steps_finished(array[v_parent], array['dead_letter'], p_actor, p_now);
        end if;
      end loop;
    end if;
    if v_wake is not null then
      foreach v_parent in array v_wake loop
        perform pgflight._wake(v_parent, 'parent_resumed', p_actor);
      end loop;
    end if;
  end if;

  -- 4. a root ends its run
  if v_runs is not null then
    update pgflight.runs r
       set status = case x.final when 'succeeded' then 'succeeded' when 'cancelled' then 'cancelled' else 'failed' end,
           finished_at = p_now
      from unnest(v_runs, v_run_finals) as x(run_id, final)
     where r.id = x.run_id and r.status = 'running';
  end if;
end
$$;

COMMENT ON FUNCTION pgflight._steps_finished(p_step_ids bigint[], p_finals text[], p_actor text, p_now timestamp with time zone) IS 'Internal: hook of every terminal step transition, set-based: cancels what an unsuccessful step left below it, pokes parents (fail-fast or wake), ends a root''s run.';

REVOKE ALL ON FUNCTION pgflight._steps_finished(p_step_ids bigint[], p_finals text[], p_actor text, p_now timestamp with time zone) FROM PUBLIC;

commit;
