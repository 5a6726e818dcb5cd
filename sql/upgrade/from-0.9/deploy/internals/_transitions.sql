-- Deploy pgflight:internals/_transitions
-- Defines: _wake(), _cancel_steps(), _cancel_tree(), _tree_steps(), _steps_finished(),
--   _step_finished(), _fail_attempt(), _cascade_root(), _lock_subtree(), _lock_cascade(),
--   _dead_letter_poisoned(), _reclaim(),
--   _reclaim_picked(),
--   _complete_many(), _complete_refusing(), _decide(), _reopen_step().
-- The transitions shared by every path that ends, retries, wakes or cancels an attempt
--   (complete, fail, reclaim, deadline, cancel, budget, gate): the parent poke (fan-in) and the
--   run's own status.
-- None is granted to any role.
begin;
set local role pgflight_owner;

-- Requeue a parked parent when its last child ended. Compare-and-swap on awaiting_children, so
-- a parent is woken at most once per parking however many callers race here.
create or replace function pgflight._wake(p_step_id bigint, p_reason text, p_actor text default null)
returns boolean
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_attempt record;
begin
  update pgflight.step_attempts a
     set status = 'queued', available_after = pgflight._now()
   where a.step_id = p_step_id and a.status = 'awaiting_children'
  returning a.id, a.run_id into v_attempt;
  if not found then
    return false;
  end if;
  perform pgflight._event(v_attempt.run_id, p_step_id, v_attempt.id, 'awaiting_children', 'queued',
                          null, p_reason, p_actor);
  perform pgflight._notify_ready();
  return true;
end
$$;
comment on function pgflight._wake(bigint, text, text) is
  'Internal: awaiting_children -> queued for the step''s live attempt, once; true when it moved.';

-- Cancel every live attempt of the given steps. Leased attempts become cancel_requested (their
-- worker learns it on the next heartbeat); the rest become cancelled at once. Attempts are locked
-- deepest first, so a concurrent child completion (child attempt, then parent row) cannot form a
-- lock cycle with us. Parents inside the set are not poked: they are cancelled here too.
create or replace function pgflight._cancel_steps(p_step_ids bigint[], p_actor text, p_reason text)
returns table (cancelled integer, cancel_requested integer)
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := pgflight._now();
  v_ids bigint[];
begin
  -- Lock the live attempts, deepest first, in a statement of its own: the UPDATE below then runs
  -- with a fresh snapshot and sees each row as it is now (a claim that committed while we waited
  -- for its lock is seen as claimed, with its worker and token).
  select array_agg(l.id) into v_ids from (
    select a.id
      from pgflight.step_attempts a
      join unnest(p_step_ids) as t(step_id) on t.step_id = a.step_id
      join pgflight.steps s on s.id = a.step_id
     where a.status in ('queued', 'claimed', 'running', 'awaiting_children', 'awaiting_approval')
     order by s.depth desc, a.id
       for update of a) l;

  return query
  with changed as (
    update pgflight.step_attempts a
       set status = case when a.status in ('claimed', 'running') then 'cancel_requested' else 'cancelled' end,
           finished_at = case when a.status in ('claimed', 'running') then null else v_now end,
           reason = 'cancelled'
      from (select a0.id, a0.status as old_status from pgflight.step_attempts a0 where a0.id = any (v_ids)) t
     where a.id = t.id
       and a.status in ('queued', 'claimed', 'running', 'awaiting_children', 'awaiting_approval')
    returning a.id, a.step_id, a.run_id, a.worker_id, t.old_status, a.status
  ), logged as (
    insert into pgflight.events (at, run_id, step_id, attempt_id, from_status, to_status, worker_id, reason, actor, detail)
    select v_now, c.run_id, c.step_id, c.id, c.old_status, c.status, c.worker_id, c.status, p_actor,
           case when p_reason is null then null else jsonb_build_object('note', p_reason) end
      from changed c
  )
  select count(*) filter (where c.status = 'cancelled')::integer,
         count(*) filter (where c.status = 'cancel_requested')::integer
    from changed c;
end
$$;
comment on function pgflight._cancel_steps(bigint[], text, text) is
  'Internal: cancel the live attempts of these steps; returns how many were cancelled and how many '
  'were leased and became cancel_requested.';

-- Cancel a whole tree until nothing live is left in it: every step of run p_run_id when
-- p_step_id is null, else p_step_id and all its descendants. A write this cancel waited for (a
-- retry, a reclaim, a spawn) may have created attempts or children its pass could not see, so
-- the tree is read anew after each pass, and the loop ends when a fresh read finds nothing live.
-- Nothing can create one after that: every attempt that could is cancelled or cancel_requested
-- and refuses fenced writes. Shared by cancel_run, cancel_step and _step_finished.
create or replace function pgflight._cancel_tree(p_run_id bigint, p_step_id bigint, p_actor text, p_reason text)
returns table (cancelled integer, cancel_requested integer)
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_ids bigint[];
  v_pass_c integer;
  v_pass_r integer;
begin
  cancelled := 0;
  cancel_requested := 0;
  loop
    v_ids := pgflight._tree_steps(p_run_id, p_step_id);
    select c.cancelled, c.cancel_requested into v_pass_c, v_pass_r
      from pgflight._cancel_steps(v_ids, p_actor, p_reason) c;
    cancelled := cancelled + v_pass_c;
    cancel_requested := cancel_requested + v_pass_r;
    exit when not exists (
      select from unnest(pgflight._tree_steps(p_run_id, p_step_id)) as t(id)
        join pgflight.step_attempts a on a.step_id = t.id
       where a.status in ('queued', 'claimed', 'running', 'awaiting_children', 'awaiting_approval'));
  end loop;
  return next;
end
$$;
comment on function pgflight._cancel_tree(bigint, bigint, text, text) is
  'Internal: cancel every live attempt of a run (p_step_id null) or of a subtree, until none is left.';

-- The steps of a run (p_step_id null), or of the subtree rooted at p_step_id: one indexed read.
create or replace function pgflight._tree_steps(p_run_id bigint, p_step_id bigint)
returns bigint[]
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  select case when p_step_id is null
    then (select array_agg(s.id) from pgflight.steps s where s.run_id = p_run_id)
    else (with recursive sub as (
            select p_step_id as id
            union all
            select c.id from pgflight.steps c join sub on c.parent_id = sub.id
          ) select array_agg(sub.id) from sub)
  end
$$;
comment on function pgflight._tree_steps(bigint, bigint) is
  'Internal: ids of a run''s steps, or of a step and its descendants.';

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
-- Plans (issue 18): no sequential scan (a plan made while steps was small hash-joined the whole
-- table per batch). Its own two common statements on generic plans (their custom plans were made
-- again on every call: 0.28 ms of each complete_batch); when a step left work below it or has a
-- parent, plan_cache_mode goes back to auto until it returns, so what runs below (a whole tree's
-- cancel, fan-in pokes, wakes) is planned for its arrays' sizes.
create or replace function pgflight._steps_finished(p_step_ids bigint[], p_finals text[], p_actor text,
                                                    p_now timestamptz)
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
as $$
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
  -- issue 18: one read of the finished steps, by primary key, says which of 1-3 can have work and
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
comment on function pgflight._steps_finished(bigint[], text[], text, timestamptz) is
  'Internal: hook of every terminal step transition, set-based: cancels what an unsuccessful step '
  'left below it, pokes parents (fail-fast or wake), ends a root''s run.';

-- One step's end (the row-by-row paths: fail, reclaim, deadline, release of a cancel, cancel_step).
create or replace function pgflight._step_finished(p_step_id bigint, p_final text, p_actor text default null)
returns void
language sql volatile
set search_path = pg_catalog, pg_temp
as $$ select pgflight._steps_finished(array[p_step_id], array[p_final], p_actor, pgflight._now()) $$;
comment on function pgflight._step_finished(bigint, text, text) is
  'Internal: _steps_finished for one step ending now.';

-- End a leased attempt unsuccessfully and decide what follows: a new queued attempt after the
-- backoff, or the dead letter at the ceiling (or at once when not retryable). Used by fail_step,
-- the reclaim sweep (lease_expired) and the deadline sweep (timed_out), so the ceiling is
-- enforced identically on every path (C07). The caller holds the attempt's row lock.
create or replace function pgflight._fail_attempt(
  p_attempt_id bigint, p_from text, p_status text, p_error jsonb, p_retryable boolean,
  p_retry_after_s double precision, p_reason text, p_actor text default null)
returns table (outcome text, next_attempt_id bigint, available_after timestamptz)
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := pgflight._now();
  v_step record;
  v_att record;
  v_run_status text;
  v_delay double precision;
  v_next bigint;
  v_at timestamptz;
begin
  select a.id, a.step_id, a.run_id, a.worker_id, a.recipe, a.priority into v_att
    from pgflight.step_attempts a where a.id = p_attempt_id;
  select s.* into v_step from pgflight.steps s where s.id = v_att.step_id for update;
  select r.status into v_run_status from pgflight.runs r where r.id = v_att.run_id;

  if v_run_status <> 'running' then
    -- C18: never requeue under a terminal run.
    update pgflight.step_attempts
       set status = 'cancelled', finished_at = v_now, error = p_error, reason = p_reason
     where id = p_attempt_id;
    perform pgflight._event(v_att.run_id, v_att.step_id, p_attempt_id, p_from, 'cancelled', v_att.worker_id,
                            'cancelled', p_actor, jsonb_build_object('cause', p_reason, 'run_status', v_run_status));
    perform pgflight._step_finished(v_att.step_id, 'cancelled', p_actor);
    return query select 'cancelled'::text, null::bigint, null::timestamptz;
    return;
  end if;

  update pgflight.steps set failed_attempts = failed_attempts + 1 where id = v_step.id;

  if not p_retryable or v_step.failed_attempts + 1 >= v_step.max_attempts then
    update pgflight.step_attempts
       set status = 'dead_letter', finished_at = v_now, error = p_error, reason = p_reason
     where id = p_attempt_id;
    perform pgflight._event(v_att.run_id, v_att.step_id, p_attempt_id, p_from, 'dead_letter', v_att.worker_id,
                            p_reason, p_actor,
                            jsonb_build_object('failed_attempts', v_step.failed_attempts + 1,
                                               'max_attempts', v_step.max_attempts, 'retryable', p_retryable));
    perform pgflight._step_finished(v_att.step_id, 'dead_letter', p_actor);
    return query select 'dead_letter'::text, null::bigint, null::timestamptz;
    return;
  end if;

  update pgflight.step_attempts
     set status = p_status, finished_at = v_now, error = p_error, reason = p_reason
   where id = p_attempt_id;
  perform pgflight._event(v_att.run_id, v_att.step_id, p_attempt_id, p_from, p_status, v_att.worker_id,
                          p_reason, p_actor);

  -- clamped to [0, 30 days] whatever was stored or passed (issue 14 case 1): this runs inside a
  -- sweep and a claim, where a raise would stop every other row
  v_delay := least(greatest(coalesce(p_retry_after_s, pgflight._backoff_s(v_step.failed_attempts + 1, v_step.backoff), 0), 0),
                   pgflight._limit('delay_s'));
  v_at := v_now + make_interval(secs => v_delay);
  insert into pgflight.step_attempts (step_id, run_id, attempt_no, recipe, priority, status, available_after, created_at)
  values (v_step.id, v_att.run_id, v_step.last_attempt_no + 1, v_att.recipe, v_att.priority, 'queued', v_at, v_now)
  returning id into v_next;
  update pgflight.steps set last_attempt_no = v_step.last_attempt_no + 1 where id = v_step.id;
  perform pgflight._event(v_att.run_id, v_att.step_id, v_next, null, 'queued', null, 'retry_scheduled', p_actor,
                          jsonb_build_object('delay_s', round(v_delay::numeric, 3), 'attempt_no', v_step.last_attempt_no + 1));
  if v_delay <= 0 then
    perform pgflight._notify_ready();
  end if;
  return query select 'retry'::text, v_next, v_at;
end
$$;
comment on function pgflight._fail_attempt(bigint, text, text, jsonb, boolean, double precision, text, text) is
  'Internal: end an attempt unsuccessfully; returns outcome retry (with the next attempt and when it '
  'becomes claimable), dead_letter or cancelled (the run had already ended).';

-- The lock order of a step's unsuccessful end (docs/locking.md, "one order for every end").
-- A step that ends unsuccessfully cancels what it left below it, and under a parent with
-- fail_fast that still waits for its children it dead-letters the parent, which cancels the
-- parent's whole subtree (and so on up while the ancestors have fail_fast and wait). Done in that
-- order, the cascade would lock attempts after steps rows (its own, the parent's), against the
-- global order (attempts before steps), and a sibling completed at that moment (its attempt, then
-- the parent's row) deadlocks with it. So before any steps row the caller locks every live
-- attempt of the subtree the cascade may touch (_cascade_root: its root; _lock_subtree: the locks).

-- The root of the subtree an unsuccessful end of p_step_id may cancel: the topmost ancestor
-- reached through parents that have fail_fast and whose live attempt still waits for its children
-- (awaiting_children: the end can dead-letter it); else the step itself when it has children;
-- else null (nothing but its own attempt). A parent whose attempt already ended (a cascade already
-- ran) is not climbed: the end of each of its other children then costs its own subtree only, not
-- the whole family's again.
create or replace function pgflight._cascade_root(p_step_id bigint)
returns bigint
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_id bigint := p_step_id;
  v_top bigint;
  v_step record;
begin
  loop
    select s.parent_id into v_id from pgflight.steps s where s.id = v_id;
    exit when v_id is null;
    select s.fail_fast, s.parent_id into v_step from pgflight.steps s where s.id = v_id;
    exit when not coalesce(v_step.fail_fast, false)
           or not exists (select from pgflight.step_attempts a
                           where a.step_id = v_id and a.status = 'awaiting_children');
    v_top := v_id;
  end loop;
  if v_top is null and exists (select from pgflight.steps c where c.parent_id = p_step_id) then
    v_top := p_step_id;
  end if;
  return v_top;
end
$$;
comment on function pgflight._cascade_root(bigint) is
  'Internal: root of the subtree an unsuccessful end of this step may cancel (a waiting fail-fast '
  'ancestor, else the step when it has children), or null.';

-- Lock every live attempt of p_top's subtree, deepest first then id (the order cancel uses), and
-- keep them locked: no attempt of the subtree can then start, end or be created under it by
-- another transaction (each such write needs one of these rows). The first read waits (or, with
-- p_nowait, raises 55P03: a sweep leaves the row to its next pass). An attempt committed after
-- that read's snapshot (a sibling's retry, a reclaim's successor, a child spawned by a
-- transaction this read waited for) is not among the rows it locked, so the subtree is read
-- again, NOWAIT, until a read finds no live attempt it does not already hold. When another
-- transaction holds such a new attempt, every lock taken here is given back (the block is rolled
-- back), this waits for that transaction with nothing held, and starts over: a wait while holding
-- the subtree would be out of order (that transaction may need a parked attempt held here).
-- Errors: 55P03 with p_nowait when a row is in use; lock_timeout as set.
create or replace function pgflight._lock_subtree(p_top bigint, p_nowait boolean)
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_steps bigint[];
  v_prev bigint[];
  v_ids bigint[];
  v_busy bigint[];
begin
  loop
    v_prev := null;
    begin
      loop
        v_steps := pgflight._tree_steps(null, p_top);
        if p_nowait or v_prev is not null then
          select array_agg(l.id order by l.id) into v_ids from (
            select a.id from pgflight.step_attempts a
              join unnest(v_steps) as t(id) on t.id = a.step_id
              join pgflight.steps s on s.id = a.step_id
             where a.status in ('queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children',
                                'awaiting_approval')
             order by s.depth desc, a.id
               for update of a nowait) l;
        else
          select array_agg(l.id order by l.id) into v_ids from (
            select a.id from pgflight.step_attempts a
              join unnest(v_steps) as t(id) on t.id = a.step_id
              join pgflight.steps s on s.id = a.step_id
             where a.status in ('queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children',
                                'awaiting_approval')
             order by s.depth desc, a.id
               for update of a) l;
        end if;
        -- the rows locked before cannot have changed (they are ours): the same set means nothing new
        exit when v_ids is not distinct from v_prev;
        v_prev := coalesce(v_ids, '{}');
      end loop;
      return;
    exception when lock_not_available then
      if p_nowait or v_prev is null then
        raise;
      end if;
    end;
    -- a new attempt is held elsewhere: wait for its transaction, holding nothing, then start over
    select array_agg(a.id) into v_busy
      from pgflight.step_attempts a join unnest(pgflight._tree_steps(null, p_top)) as t(id) on t.id = a.step_id
     where a.status in ('queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children', 'awaiting_approval')
       and a.id <> all (v_prev);
    begin
      perform from pgflight.step_attempts a where a.id = any (v_busy) for share of a;
      raise exception using errcode = 'ZF099', message = 'internal: give the share locks back';
    exception when sqlstate 'ZF099' then
      null;
    end;
  end loop;
end
$$;
comment on function pgflight._lock_subtree(bigint, boolean) is
  'Internal: lock every live attempt of a subtree, deepest first, including attempts committed '
  'while it waited; NOWAIT (55P03) when p_nowait.';

-- _cascade_root and _lock_subtree for the step of p_attempt_id (fail_step; the reclaim with
-- p_nowait). Returns whether anything beyond the attempt's own subtree-less self was locked.
create or replace function pgflight._lock_cascade(p_attempt_id bigint, p_nowait boolean)
returns boolean
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_top bigint;
begin
  v_top := pgflight._cascade_root((select a.step_id from pgflight.step_attempts a where a.id = p_attempt_id));
  if v_top is null then
    return false;
  end if;
  perform pgflight._lock_subtree(v_top, p_nowait);
  return true;
end
$$;
comment on function pgflight._lock_cascade(bigint, boolean) is
  'Internal: lock, deepest first, the live attempts an unsuccessful end of this attempt''s step may '
  'cancel (_cascade_root, _lock_subtree); false when that is none but its own.';

-- The last resort of a sweep (issue 14): a row whose processing raised is ended on its own —
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
create or replace function pgflight._dead_letter_poisoned(p_attempt_id bigint, p_sqlstate text, p_message text,
                                                          p_actor text)
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight._dead_letter_poisoned(bigint, text, text, text) is
  'Internal: a sweep''s last resort: dead-letter one attempt with the error that stopped it, its '
  'cascade''s attempts locked first NOWAIT (a subtree in use leaves the row for the next pass), and go on.';

-- Reclaim up to p_limit expired leases and overrun deadlines, set-based (issue 18: a mass crash
-- leaves a million lapsed leases; row by row they drained at ~200/s). Every row it touches is
-- locked with SKIP LOCKED — the attempts, then their steps, then (for a step that ends) its parent
-- step and its run — so concurrent sweepers (cron, claim_batch) never process the same attempt
-- twice, a row a worker or a client transaction holds right now is left for the next pass, and a
-- pass never waits. Then, in one subtransaction, a few statements end the whole batch:
--   retry        lease_expired / timed_out, the step's counters, the next queued attempt after the
--                backoff, one events row each (the end) and the retry's queued on the new attempt
--                (queue_event_id and queue_delay_s, shown by run_events as the retry_scheduled row
--                _fail_attempt writes; tables/step_attempts_retry_queue_event);
--   dead letter  at the step's ceiling; cancelled when cancel_requested or under an ended run;
--                then _steps_finished once for the set (parent pokes and wakes, runs).
-- A step ending under a fail-fast parent (its cascade must lock the subtree first, _lock_cascade
-- NOWAIT) goes row by row. If the set statements raise, they are rolled back and the batch goes
-- row by row too: each row in a block of its own (issue 14), a row that raises is dead-lettered
-- with its real error (_dead_letter_poisoned) and the sweep — and the claim_batch it runs in —
-- goes on. Costs nothing when no lease has lapsed (two index probes).
-- Two functions: _reclaim picks (its two statements on cached plans: claim_batch calls it on
-- every claim, and with nothing lapsed it costs the two index probes), _reclaim_picked ends
-- what was picked on custom plans.
create or replace function pgflight._reclaim(p_now timestamptz, p_limit integer)
returns integer
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_ids bigint[];
  v_left bigint[] := '{}';
  v_done integer := 0;
  v_until timestamptz;
begin
  -- Rows a batch left as they were (their subtree in use, a transient error, the budget spent) do
  -- not count against p_limit: they are kept out of the next pick of this call (v_left, still
  -- locked by it), and the call picks again until p_limit rows ended, nothing lapsed is left, or
  -- the time budget (pgflight.reclaim_budget_ms, default 1000, read per call; the rest waits for
  -- the next pass) is spent. So rows that cannot end now never crowd out the others, e.g. a
  -- lapsed lease of another workspace behind them in the pick's order.
  loop
    -- 1. the lapsed attempts, then overrun deadlines among the live leases: SKIP LOCKED. Not ordered
    -- by lease_expires_at: it has no index (a heartbeat stays a HOT update, tables/step_attempts_hot).
    -- Ordered by workspace_id instead, the order of the partial index of the leased rows
    -- (step_attempts_leased_ws_idx), so the pick walks that index and stops at the limit: a seq scan
    -- would read, on every pass of a drain, all the rows the earlier passes already reclaimed
    -- (quadratic over a mass crash). Every lapsed lease is taken within a few passes either way.
    select coalesce(array_agg(l.id), '{}') into v_ids from (
      select a.id from pgflight.step_attempts a
       where a.status in ('claimed', 'running', 'cancel_requested') and a.lease_expires_at < p_now
         and a.id <> all (v_left)
       order by a.workspace_id
       limit p_limit - v_done
         for update of a skip locked) l;
    if cardinality(v_ids) < p_limit - v_done then
      select v_ids || coalesce(array_agg(l.id), '{}') into v_ids from (
        select a.id from pgflight.step_attempts a
         where a.status in ('claimed', 'running') and a.deadline_at < p_now
           and (a.lease_expires_at >= p_now or a.lease_expires_at is null)
           and a.id <> all (v_left)
         order by a.deadline_at limit p_limit - v_done - cardinality(v_ids)
           for update of a skip locked) l;
    end if;
    if cardinality(v_ids) = 0 then
      return v_done;
    end if;
    if v_until is null then
      v_until := pg_catalog.clock_timestamp() + make_interval(secs =>
        coalesce(nullif(pg_catalog.current_setting('pgflight.reclaim_budget_ms', true), ''), '1000')::double precision / 1000);
      perform pg_catalog.set_config('pgflight.reclaim_until', v_until::text, true);
    end if;
    v_done := v_done + pgflight._reclaim_picked(p_now, v_ids);
    exit when v_done >= p_limit or pg_catalog.clock_timestamp() > v_until;
    -- what this batch left as it was; past ten times the limit of such rows the call stops too (a
    -- claim_batch's small reclaim does not walk a whole blocked fan-out; the sweep's limit is large)
    v_left := v_left || coalesce((select array_agg(a.id) from pgflight.step_attempts a
                                   where a.id = any (v_ids) and a.status in ('claimed', 'running', 'cancel_requested')), '{}');
    exit when cardinality(v_left) >= 10::bigint * p_limit;  -- bigint: a limit near 2^31 must not overflow (22003)
  end loop;
  return v_done;
end
$$;
comment on function pgflight._reclaim(timestamptz, integer) is
  'Internal: reclaim at most p_limit attempts whose lease lapsed or whose deadline passed, set-based, '
  'SKIP LOCKED on every row, within a time budget (pgflight.reclaim_budget_ms, default 1000); a row that '
  'raises is dead-lettered alone, a row whose cascade is locked or that meets a transient error waits '
  'for the next pass and does not count against p_limit. Picks them (held FOR UPDATE) and gives them '
  'to _reclaim_picked.';

-- The rest of _reclaim for the attempts it picked and holds FOR UPDATE (p_ids).
-- Plans: the statements of the batch (2-4) run as EXECUTE ... USING, so each is planned once per
-- pass with the batch's arrays as constants (their lengths known, = any hashed): a generic plan,
-- cached from the sixth call of a session on, estimated each array at a default size and made
-- 1,000-row batches 1.5-3x slower. Up to @v0.6.0 the function had plan_cache_mode =
-- force_custom_plan for that, which also reached the foreign-key check of every queued attempt
-- (an SPI query per inserted row, planned again on each row under that setting): 11 % of a
-- drain's CPU in perf, 98 -> 80 us of backend CPU per reclaimed lease without it (issue 18).
-- enable_seqscan off: every row is reached by primary key from the batch; a custom plan sized for
-- the batch hash-joined a sequential scan of step_attempts (all of it, on every pass of a drain).
-- enable_hashjoin and enable_mergejoin off too (issue 18, eighth session): with seq scans off, a
-- batch that is more than a few percent of the table was hash-joined to a full scan of the primary
-- key instead (step_attempts and steps in the retry statement, step_attempts and runs in the
-- classification: auto_explain, 5,000 of 20,000 leases, 0.2 s of each statement's 0.5-0.8 s), so
-- every pass of a drain still read whole tables, only by index; nested loops probe each key.
create or replace function pgflight._reclaim_picked(p_now timestamptz, p_ids bigint[])
returns integer
language plpgsql volatile
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
set enable_hashjoin = off
set enable_mergejoin = off
as $$
declare
  v_ids bigint[] := p_ids;
  v_outcomes text[];
  v_errors jsonb[];
  v_parents bigint[];
  v_runs bigint[];
  v_cascades boolean[];
  v_locked_parents bigint[];
  v_locked_runs bigint[];
  v_retry bigint[];
  v_retry_errors jsonb[];
  v_end bigint[];
  v_end_outcome text[];
  v_end_errors jsonb[];
  v_rest bigint[];
  v_rest_errors jsonb[];
  v_fin_steps bigint[];
  v_fin text[];
  v_row record;
  v_i integer;
  v_count integer := 0;
  v_n integer;
  v_notify boolean;
  v_srr text;  -- session_replication_role to restore after the successors' insert (null: not switched)
  v_q_ids bigint[];
  v_q_steps bigint[];
  v_q_runs bigint[];
  v_q_nos integer[];
  v_q_recipes text[];
  v_q_prios integer[];
  v_q_ws bigint[];
  v_q_keys text[];
  v_q_limits integer[];
  v_q_events bigint[];
  v_q_delays double precision[];
  v_until timestamptz;
  v_top bigint;
  v_blocked bigint[] := '{}';
begin
  -- 2. their steps, in id order, SKIP LOCKED (an attempt whose step is in use waits for the next
  -- pass), and in the same statement what each attempt becomes and its error (the one place it is
  -- written: the batch and the row-by-row path below both take it from here). Every join is by
  -- primary key from the batch.
  execute $q$
  with c as (
    select a.id, s.parent_id, a.run_id,
           case when a.status = 'cancel_requested' then 'cancel'
                when r.status <> 'running' then 'run_ended'
                when s.failed_attempts + 1 >= s.max_attempts then 'dead_letter'
                else 'retry' end as outcome,
           -- its end may cancel more than itself (_cascade_root): a fail-fast parent still waiting
           -- for its children, or children of its own; such a row goes row by row, its subtree
           -- locked first. A sibling of a parent whose cascade already ran is ended in the batch.
           (coalesce(p.fail_fast, false)
              and exists (select from pgflight.step_attempts pa
                           where pa.step_id = p.id and pa.status = 'awaiting_children'))
             or s.children_pending > 0 as cascades,
           -- no fencing token: the error is shown to readers, and the token is a credential
           case when a.lease_expires_at < $2
                then jsonb_build_object('message', 'lease expired: the worker stopped heartbeating',
                                        'lease_expires_at', a.lease_expires_at)
                else jsonb_build_object('message', 'deadline exceeded: the attempt ran past max_runtime_s',
                                        'deadline_at', a.deadline_at) end as error
      from unnest($1) i(id)
      join pgflight.step_attempts a on a.id = i.id
      join pgflight.steps s on s.id = a.step_id
      join pgflight.runs r on r.id = a.run_id
      left join pgflight.steps p on p.id = s.parent_id
     order by s.id
       for update of s skip locked
  )
  -- the arrays in attempt id order, one sort for all of them (an aggregate's own order by is a
  -- sort each on PostgreSQL 15: six here, seven in the split below, 13 sorts of the batch a pass)
  select array_agg(c.id), array_agg(c.outcome), array_agg(c.error), array_agg(c.parent_id), array_agg(c.run_id),
         array_agg(c.cascades)
    from (select c.* from c order by c.id) c
  $q$ into v_ids, v_outcomes, v_errors, v_parents, v_runs, v_cascades using v_ids, p_now;

  -- a step that ends needs its parent and (a root) its run locked too, SKIP LOCKED: in use, the
  -- attempt waits for the next pass
  execute $q$
  select coalesce(array_agg(l.id), '{}') from (
    select p.id from pgflight.steps p
     where p.id in (select u.parent from unnest($1, $2, $3) u(parent, outcome, cascades)
                     where u.outcome <> 'retry' and not u.cascades)
     order by p.id
       for update skip locked) l
  $q$ into v_locked_parents using v_parents, v_outcomes, v_cascades;
  execute $q$
  select coalesce(array_agg(l.id), '{}') from (
    select r.id from pgflight.runs r
     where r.id in (select u.run from unnest($1, $2, $3) u(run, parent, outcome)
                     where u.outcome <> 'retry' and u.parent is null)
     order by r.id
       for update skip locked) l
  $q$ into v_locked_runs using v_runs, v_parents, v_outcomes;

  -- the batch split by path; membership in the locked sets by = any (a constant array under the
  -- custom plans this function runs on: hashed, not a rescan per row)
  execute $q$
  select array_agg(u.id) filter (where u.path = 'retry'), array_agg(u.error) filter (where u.path = 'retry'),
         array_agg(u.id) filter (where u.path = 'end'), array_agg(u.outcome) filter (where u.path = 'end'),
         array_agg(u.error) filter (where u.path = 'end'),
         array_agg(u.id) filter (where u.path = 'rest'), array_agg(u.error) filter (where u.path = 'rest')
    from (select u.*,
                 case when u.outcome = 'retry' then 'retry'
                      when u.cascades then 'rest'
                      when u.parent = any($7) or (u.parent is null and u.run = any($8))
                        then 'end'
                      end as path  -- null: its parent or run is in use, the next pass takes it
            from unnest($1, $2, $3, $4, $5, $6)
                   u(id, outcome, error, parent, run, cascades)
           order by u.id) u  -- in id order already (the arrays above): one sort of sorted rows
  $q$ into v_retry, v_retry_errors, v_end, v_end_outcome, v_end_errors, v_rest, v_rest_errors
      using v_ids, v_outcomes, v_errors, v_parents, v_runs, v_cascades, v_locked_parents, v_locked_runs;

  -- 4. the batch, set-based, all or nothing. No statement joins one CTE's rows to another's: each
  -- reads the rows the previous one returned (a join of two CTEs is planned on their default
  -- estimates, a nested loop rescanning one per row of the other: quadratic in the batch, which
  -- made batches of 10,000 slower per row than batches of 1,000 up to @v0.4.0)
  begin
    if v_retry is not null then
      -- the attempts end, their steps count the failure, their successors are queued (ids drawn
      -- here, so the end's events row and the successor are written from one row), with the end's
      -- events row; the retry's queued is the successor's queue_event_id (its backoff in
      -- queue_delay_s), which run_events shows as the retry_scheduled row (issue 18: one events
      -- row and its two index entries less per lease). Both events ids drawn here, a lease's end
      -- then its queued, lease by lease, so the log keeps the order it had with two events rows.
      -- $1 the attempts, $2 their errors, $3 the time. The successors are written by the next
      -- statement, from the rows this one returns (see there).
      execute $q$
      with r0 as (
        select a.id, a.step_id, a.run_id, a.status as old_status, a.worker_id, a.recipe, a.priority,
               a.workspace_id, a.concurrency_key, a.concurrency_limit, a.lease_expires_at < $3 as lapsed,
               i.error, s.failed_attempts + 1 as failed, s.last_attempt_no + 1 as next_no, s.backoff
          from unnest($1, $2) i(id, error)
          join pgflight.step_attempts a on a.id = i.id
          join pgflight.steps s on s.id = a.step_id
      ), delays as (
        -- once per distinct (failures, backoff): after a mass crash that is a handful, not a row each;
        -- clamped to [0, 30 days] whatever was stored (issue 14 case 1), as _fail_attempt
        select k.failed, k.backoff,
               least(greatest(coalesce(pgflight._backoff_s(k.failed, k.backoff), 0), 0),
                     pgflight._limit('delay_s')) as delay
          from (select distinct r0.failed, r0.backoff from r0) k
      ), r as (
        select x.*, nextval('pgflight.step_attempts_id_seq') as new_id,
               nextval('pgflight.events_id_seq') as end_event_id,
               nextval('pgflight.events_id_seq') as queue_event_id
          from (select r0.*, d.delay,
                       case when r0.lapsed then 'lease_expired' else 'timed_out' end as to_status,
                       case when r0.lapsed then 'lease_expired' else 'deadline_exceeded' end as reason
                  from r0 join delays d on d.failed = r0.failed and d.backoff is not distinct from r0.backoff
                 order by r0.id) x
      ), ended as (
        update pgflight.step_attempts a
           set status = r.to_status, finished_at = $3, reason = r.reason, error = r.error
          from r
         where a.id = r.id
        returning r.id, r.step_id, r.run_id, r.old_status, r.worker_id, r.recipe, r.priority, r.workspace_id,
                  r.concurrency_key, r.concurrency_limit, r.failed, r.next_no, r.delay, r.to_status, r.reason,
                  r.new_id, r.end_event_id, r.queue_event_id  -- not the error nor the backoff (jsonb):
                                                              -- read by no statement below
      ), bumped as (
        update pgflight.steps s set failed_attempts = e.failed, last_attempt_no = e.next_no
          from ended e
         where s.id = e.step_id
      ), logged as (
        insert into pgflight.events (id, at, run_id, step_id, attempt_id, from_status, to_status, worker_id,
                                     reason, actor)
        select e.end_event_id, $3, e.run_id, e.step_id, e.id, e.old_status, e.to_status, e.worker_id, e.reason,
               'reclaim'
          from ended e order by e.id
      )
      -- the successors' columns side by side, in the lapsed attempts' order: one sort for all of
      -- them (an aggregate's own order by is a sort each on PostgreSQL 15)
      select count(*), coalesce(bool_or(e.delay <= 0), false), array_agg(e.new_id), array_agg(e.step_id),
             array_agg(e.run_id), array_agg(e.next_no), array_agg(e.recipe), array_agg(e.priority),
             array_agg(e.workspace_id), array_agg(e.concurrency_key), array_agg(e.concurrency_limit),
             array_agg(e.queue_event_id), array_agg(e.delay)
        from (select e.* from ended e order by e.id) e
      $q$ into v_n, v_notify, v_q_ids, v_q_steps, v_q_runs, v_q_nos, v_q_recipes, v_q_prios, v_q_ws,
               v_q_keys, v_q_limits, v_q_events, v_q_delays
        using v_retry, v_retry_errors, p_now;

      -- the successors, queued. Their flow columns are copied from the attempt each replaces (the
      -- step's), so the fill trigger (step_attempts_fill_flow) has nothing to do. Issue 18, ninth
      -- session: their one foreign key (step_attempts_step_id_fkey) holds by construction: each
      -- names a step that statement 2 above locked FOR UPDATE in this transaction, and that the
      -- statement before this one updated, so no other session can delete it before this commits
      -- (a delete waits for the lock; a step deleted before the lock was never classified: the
      -- join dropped its attempt) and nothing in this transaction deletes steps. Its check is a
      -- per-row trigger, one SPI query per successor (9 % of a drain's backend CPU in the eighth
      -- session's perf profile), so a batch of at least 500 is inserted with
      -- session_replication_role = replica when the owner may set it (internals/_row_triggers,
      -- as submit_runs and purge_finished), and the setting is restored right after the insert,
      -- before any other write; an error in between rolls it back with the block's subtransaction.
      -- Only this insert runs so: the lapsed attempts' update above keeps its triggers
      -- (step_attempts_return_slots, step_attempts_key_slot_freed). So a trigger a DBA adds to
      -- step_attempts does not fire for these rows (docs/security.md). Below 500 (the reclaim a
      -- claim_batch runs, a sweep's first pass) the checks run: switching the setting resets the
      -- session's cached plans, which a worker's claims would pay for.
      -- $1.. the successors' columns, $11 their delays, $12 the time.
      v_srr := case when v_n >= 500 then pgflight._row_triggers_off() end;
      execute $q$
      insert into pgflight.step_attempts (id, step_id, run_id, attempt_no, recipe, priority, status,
                                          available_after, created_at, workspace_id, concurrency_key,
                                          concurrency_limit, queue_event_id, queue_delay_s)
      overriding system value
      select q.id, q.step_id, q.run_id, q.attempt_no, q.recipe, q.priority, 'queued',
             $12 + make_interval(secs => q.delay), $12, q.workspace_id, q.concurrency_key,
             q.concurrency_limit, q.queue_event_id, q.delay
        from unnest($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
               q(id, step_id, run_id, attempt_no, recipe, priority, workspace_id, concurrency_key,
                 concurrency_limit, queue_event_id, delay)
      $q$ using v_q_ids, v_q_steps, v_q_runs, v_q_nos, v_q_recipes, v_q_prios, v_q_ws, v_q_keys, v_q_limits,
                v_q_events, v_q_delays, p_now;
      if v_srr is not null then
        perform pgflight._row_triggers_on(v_srr);  -- a definer of pgflight_privileged: the owner may not set it
      end if;
      v_count := v_count + v_n;
      if v_notify then
        perform pgflight._notify_ready();
      end if;
    end if;

    if v_end is not null then
      -- $1 the attempts, $2 their outcomes, $3 their errors, $4 the time
      execute $q$
      with e as (
        select a.id, a.step_id, a.run_id, a.status as old_status, a.worker_id, o.outcome, o.error,
               s.failed_attempts, s.max_attempts, u.status as run_status,
               case when a.lease_expires_at < $4 then 'lease_expired' else 'deadline_exceeded' end as reason,
               case when o.outcome = 'dead_letter' then 'dead_letter' else 'cancelled' end as final
          from unnest($1, $2, $3) as o(id, outcome, error)
          join pgflight.step_attempts a on a.id = o.id
          join pgflight.steps s on s.id = a.step_id
          join pgflight.runs u on u.id = a.run_id
      ), ended as (
        update pgflight.step_attempts a
           set status = e.final, finished_at = $4,
               reason = case when e.outcome = 'cancel' then a.reason else e.reason end,
               error = case when e.outcome = 'cancel' then a.error else e.error end
          from e
         where a.id = e.id
        returning e.*
      ), bumped as (
        update pgflight.steps s set failed_attempts = s.failed_attempts + 1
          from ended e
         where s.id = e.step_id and e.outcome = 'dead_letter'
      ), logged as (
        insert into pgflight.events (at, run_id, step_id, attempt_id, from_status, to_status, worker_id, reason,
                                     actor, detail)
        select $4, e.run_id, e.step_id, e.id, e.old_status, e.final, e.worker_id,
               case when e.outcome = 'dead_letter' then e.reason else 'cancelled' end, 'reclaim',
               case e.outcome
                 when 'cancel' then jsonb_build_object('cause', 'lease_expired')
                 when 'run_ended' then jsonb_build_object('cause', e.reason, 'run_status', e.run_status)
                 else jsonb_build_object('failed_attempts', e.failed_attempts + 1, 'max_attempts', e.max_attempts,
                                         'retryable', true) end
          from ended e order by e.id
      )
      select array_agg(e.step_id order by e.step_id), array_agg(e.final order by e.step_id)
        from ended e
      $q$ into v_fin_steps, v_fin using v_end, v_end_outcome, v_end_errors, p_now;
      perform pgflight._steps_finished(v_fin_steps, v_fin, 'reclaim', p_now);
      v_count := v_count + cardinality(v_fin_steps);
    end if;
  exception when others then
    -- some row raised: none of the batch was written; each row on its own below
    v_count := 0;
    v_rest := coalesce(v_rest, '{}') || coalesce(v_retry, '{}') || coalesce(v_end, '{}');
    v_rest_errors := coalesce(v_rest_errors, '{}') || coalesce(v_retry_errors, '{}') || coalesce(v_end_errors, '{}');
  end;

  -- 5. row by row: cascades, and a batch that raised; each row read when its turn comes (a
  -- cascade before it may have ended it). A row whose cascade cannot take its locks now (NOWAIT),
  -- or that meets a transient error (a deadlock, a lock timeout, a serialization failure), is
  -- left as it is for the next pass: it still holds its lease row, and the next pass picks it
  -- again. A subtree found in use is remembered (v_blocked), so its other rows are left without
  -- trying again: one try per subtree and pass, not one per sibling. Past the pass's time budget
  -- (pgflight.reclaim_until, set by _reclaim) the remaining rows are left too.
  v_until := nullif(pg_catalog.current_setting('pgflight.reclaim_until', true), '')::timestamptz;
  for v_i in 1 .. coalesce(cardinality(v_rest), 0) loop
    exit when v_until is not null and pg_catalog.clock_timestamp() > v_until;
    select a.id, a.status, a.step_id, a.run_id, a.worker_id, a.lease_expires_at < p_now as lapsed,
           (a.status = 'cancel_requested' or s.failed_attempts + 1 >= s.max_attempts) as ends_step
      into v_row
      from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id
     where a.id = v_rest[v_i];
    continue when v_row.status not in ('claimed', 'running', 'cancel_requested');  -- a cascade ended it
    v_top := case when v_row.ends_step then pgflight._cascade_root(v_row.step_id) end;
    continue when v_top = any (v_blocked);
    v_count := v_count + 1;
    begin
      if v_top is not null then
        perform pgflight._lock_subtree(v_top, true);
      end if;
      if v_row.status = 'cancel_requested' then
        update pgflight.step_attempts set status = 'cancelled', finished_at = p_now where id = v_row.id;
        perform pgflight._event(v_row.run_id, v_row.step_id, v_row.id, 'cancel_requested', 'cancelled',
                                v_row.worker_id, 'cancelled', 'reclaim', jsonb_build_object('cause', 'lease_expired'));
        perform pgflight._step_finished(v_row.step_id, 'cancelled', 'reclaim');
      else
        perform pgflight._fail_attempt(v_row.id, v_row.status,
          case when v_row.lapsed then 'lease_expired' else 'timed_out' end, v_rest_errors[v_i], true, null,
          case when v_row.lapsed then 'lease_expired' else 'deadline_exceeded' end, 'reclaim');
      end if;
    exception
      when lock_not_available then
        v_count := v_count - 1;  -- a row of its subtree is in use: the next pass takes this row
        if v_top is not null then
          v_blocked := v_blocked || v_top;
        end if;
      when deadlock_detected or serialization_failure then
        v_count := v_count - 1;  -- transient: the next pass takes this row
      when others then
        perform pgflight._dead_letter_poisoned(v_row.id, sqlstate, sqlerrm, 'reclaim');
        if exists (select from pgflight.step_attempts a
                    where a.id = v_row.id and a.status in ('claimed', 'running', 'cancel_requested')) then
          v_count := v_count - 1;  -- left as it was (its subtree in use): the next pass takes it
        end if;
    end;
  end loop;
  return v_count;
end
$$;
comment on function pgflight._reclaim_picked(timestamptz, bigint[]) is
  'Internal: _reclaim''s second half: ends the attempts p_ids (picked and locked by _reclaim) as '
  'retries, dead letters or cancellations, set-based, a batch that raises redone row by row. '
  'Returns how many were reclaimed.';

-- The core of successful completion, set-based, shared by complete_step and complete_batch:
-- a batch of n attempts costs a handful of statements, not n of each. For each attempt given
-- (parallel arrays) the outcome is 'succeeded', or 'lease_lost' / 'cancelled' when it is not
-- held with that token (then nothing changed for it). Compare-and-swap on (id, token, leased
-- status): of a completion racing a reclaim or a cancel, whichever locks the row first wins.
-- What follows (pokes, wakes, runs) is _steps_finished, the same routine as every other path.
-- Locks are taken in a fixed order — attempts by id, then parents by id, then runs — so batches
-- cannot deadlock with each other, with heartbeat (ids ascending) or with cancel (attempts first).
-- Plans (issue 18): generic from the first call, no sequential scan. A custom plan per call cost
-- about 1 ms of each complete_batch in the peers' burn-down (pg_stat_statements, track_planning).
-- A generic plan sizes every array at ten rows, so no statement here joins one array to another
-- (a nested loop over two unnests is quadratic in the batch: 25 s for 10,000 attempts).
-- Issue 18 (server CPU per step): the lock, the success, its events rows and, for a batch of
-- roots only (no step has a parent: the burn-down's shape), their runs' end are one statement;
-- such a batch needs nothing else of _steps_finished (a success cancels nothing below it and pokes
-- no parent), so it is not called. A batch with a child goes through _steps_finished whole, in its
-- lock order. When every attempt given succeeded, once each, the outcomes are not read back.
create or replace function pgflight._complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[],
                                        p_now timestamptz)
returns table (attempt_id bigint, outcome text)
language plpgsql volatile
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
as $$
declare
  v_ids bigint[];
  v_steps bigint[];
  v_children boolean;
begin
  with locked as (
    -- 1. lock the attempts still held with these tokens by workers of this login (issue 13: one
    -- primary-key probe of workers per attempt; another login's attempt is not held by the caller),
    -- in id order (the sort below the row locks), each with its result: an attempt given twice
    -- with its token keeps the first result given.
    -- Each given attempt is probed by primary key (a LATERAL subquery behind OFFSET 0, which the
    -- planner keeps as the inner side of a nested loop), and its status and login are checked on
    -- the locked row (the row as it is now, after the lock). Written as a join with the status in
    -- its WHERE, the generic plan this function runs on could read the partial index of the
    -- leased attempts instead: after an ANALYZE that saw few leases it estimated that index at
    -- one row and scanned all of it once per given attempt (CI, ninth session: a 10,000-attempt
    -- complete_batch took 6.4 s of CPU instead of 0.4; tests_py/test_scenarios_attack.py). Only
    -- the primary key answers id = and a token; a row locked here that fails the checks (another
    -- token's success, a cancelled attempt) is not written, and its lock ends with the transaction.
    select a.id, q.result
      from (select distinct on (u.id, u.token) u.id, u.token, u.result
              from unnest(p_attempt_ids, p_tokens, p_results) with ordinality as u(id, token, result, ord)
             order by u.id, u.token, u.ord) q
      cross join lateral (
        select a0.id, a0.status, a0.worker_id from pgflight.step_attempts a0
         where a0.id = q.id and a0.fencing_token = q.token
        offset 0) a
     where a.status in ('claimed', 'running')
       and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
     order by a.id
       for update of a
  ), done as (
    -- 2. succeed them. Issue 18: a success from running takes an events id onto the attempt
    -- (finish_event_id; run_events shows it as the 'succeeded' row) instead of an events row; a
    -- success straight from claimed (never started) still writes its events row. (The rows
    -- locked above: a row that changed between this statement's snapshot and its lock is
    -- updated as it is now, its status rechecked by the lock.) The steps row by primary key,
    -- for the parent.
    update pgflight.step_attempts a
       set status = 'succeeded', finished_at = p_now, result = l.result,
           started_at = coalesce(a.started_at, a.claimed_at),
           finish_event_id = case when a.status = 'running' then nextval('pgflight.events_id_seq') end
      from locked l, pgflight.steps s
     where a.id = l.id and s.id = a.step_id
    returning a.id, a.step_id, a.run_id, a.worker_id, a.finish_event_id, s.parent_id
  ), logged as (
    -- the events row of a success straight from claimed
    insert into pgflight.events (at, run_id, step_id, attempt_id, from_status, to_status, worker_id, reason)
    select p_now, d.run_id, d.step_id, d.id, 'claimed', 'succeeded', d.worker_id, 'succeeded'
      from done d
     where d.finish_event_id is null
  ), ended as (
    -- 3. a batch of roots only: each ends its run (rule 4 of _steps_finished, for a success)
    update pgflight.runs r
       set status = 'succeeded', finished_at = p_now
      from done d
     where r.id = d.run_id and r.status = 'running'
       and not exists (select from done c where c.parent_id is not null)
  )
  select array_agg(d.id), array_agg(d.step_id), coalesce(bool_or(d.parent_id is not null), false)
    into v_ids, v_steps, v_children
    from done d;

  -- 3'. a batch with a child: what follows the steps' ends (pokes, wakes, runs), written once for
  -- every path
  if v_children then
    perform pgflight._steps_finished(v_steps, array_fill('succeeded'::text, array[cardinality(v_steps)]), null, p_now);
  end if;

  if cardinality(v_ids) = cardinality(p_attempt_ids) then
    -- each attempt given succeeded here, none given twice: nothing to read back
    return query select u.id, 'succeeded'::text from unnest(p_attempt_ids) as u(id);
    return;
  end if;
  -- the others, in one statement: cancelled only for an attempt of this login's own workers; any
  -- other attempt (another login's, another workspace's, whatever token) is lease_lost, exactly as
  -- an unknown one, so its status is never told
  return query
  select q.id,
         case when a.status = 'succeeded' and a.fencing_token = q.token and q.id = any (v_ids) then 'succeeded'
              when a.status in ('cancel_requested', 'cancelled') and a.fencing_token = q.token
                   and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
                then 'cancelled'
              else 'lease_lost' end
    from unnest(p_attempt_ids, p_tokens) with ordinality as q(id, token, ord)
    left join pgflight.step_attempts a on a.id = q.id
   order by q.ord;
end
$$;
comment on function pgflight._complete_many(bigint[], bigint[], jsonb[], timestamptz) is
  'Internal: complete attempts set-based; per attempt succeeded | lease_lost | cancelled.';

-- complete_batch's slow path (issue 14 case 2): p_errors[i] not null means result i cannot be
-- stored (refused by the jsonb parser, too large). That attempt, if still held with its token,
-- fails at once and for good (_fail_attempt, not retryable: dead letter, reason result_refused,
-- the real error kept); the others complete through _complete_many as usual. Outcome per row,
-- in the order given: succeeded | result_refused | lease_lost | cancelled (stale rows logged).
-- Lock order (docs/locking.md): a refused row ends its step, and that end may cancel a subtree (a
-- waiting fail-fast ancestor's, or its own children's). So first, for each refused row still held
-- with its token (id order), the live attempts of that subtree, deepest first then id
-- (_lock_cascade, as fail_step); then every attempt of the batch, in id order; only then any
-- steps row. Before, the cascade locked a sibling's attempt after the parent's steps row, against
-- that sibling's completion (its attempt, then the parent's row): 40P01.
create or replace function pgflight._complete_refusing(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[],
                                                       p_errors jsonb[])
returns table (attempt_id bigint, outcome text)
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_n integer := coalesce(cardinality(p_attempt_ids), 0);
  v_out text[] := array_fill(null::text, array[greatest(v_n, 1)]);
  v_rest integer[];
  v_i integer;
  v_status text;
  v_row record;
begin
  -- Only attempts held by this login's own workers are written: another login's attempt, even
  -- with its current token (a leaked one), is lease_lost for its row alone (_complete_many's
  -- answer for it), the rest of the batch answered as usual
  for v_row in
    select distinct a.id from pgflight.step_attempts a
      join unnest(p_attempt_ids, p_tokens, p_errors) as q(id, token, error)
        on q.id = a.id and q.token = a.fencing_token
     where q.error is not null and a.status in ('claimed', 'running')
       and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
     order by a.id
  loop
    perform pgflight._lock_cascade(v_row.id, false);
  end loop;
  perform from (
    select a.id from pgflight.step_attempts a
      join unnest(p_attempt_ids, p_tokens) as q(id, token) on q.id = a.id and q.token = a.fencing_token
     where a.status in ('claimed', 'running')
       and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
     order by a.id
       for update of a) l;
  for v_i in 1 .. v_n loop
    continue when p_errors[v_i] is null;
    select a.status into v_status from pgflight.step_attempts a
     where a.id = p_attempt_ids[v_i] and a.fencing_token = p_tokens[v_i] and a.status in ('claimed', 'running')
       and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user);
    if found then
      perform pgflight._fail_attempt(p_attempt_ids[v_i], v_status, 'failed', p_errors[v_i], false, null,
                                     'result_refused');
      v_out[v_i] := 'result_refused';
    end if;
  end loop;
  select array_agg(q.ord order by q.ord) into v_rest
    from generate_series(1, v_n) as q(ord) where v_out[q.ord] is null;
  if v_rest is not null then
    v_i := 0;
    for v_row in
      select c.outcome from pgflight._complete_many(
               (select array_agg(p_attempt_ids[r] order by k) from unnest(v_rest) with ordinality as u(r, k)),
               (select array_agg(p_tokens[r] order by k) from unnest(v_rest) with ordinality as u(r, k)),
               (select array_agg(case when p_errors[r] is null then p_results[r] end order by k)
                  from unnest(v_rest) with ordinality as u(r, k)),
               pgflight._now()) c
    loop
      v_i := v_i + 1;
      v_out[v_rest[v_i]] := v_row.outcome;
      if v_row.outcome <> 'succeeded' then
        perform pgflight._record_stale(p_attempt_ids[v_rest[v_i]], p_tokens[v_rest[v_i]], 'complete');
      end if;
    end loop;
  end if;
  return query select p_attempt_ids[q.ord], v_out[q.ord] from generate_series(1, v_n) as q(ord);
end
$$;
comment on function pgflight._complete_refusing(bigint[], bigint[], jsonb[], jsonb[]) is
  'Internal: complete a batch in which some results cannot be stored: those attempts fail alone '
  '(result_refused), the others complete.';

-- Shared by approve and expire_approvals: record the decision on a gate row the caller has
-- locked, and requeue the step if it is parked at that gate. An attempt parked on a pending timer
-- or event wait (pgflight.waits) is not woken by a decision made early for a later gate: the
-- decision is kept and read when the step reaches the gate.
create or replace function pgflight._decide(p_gate_id bigint, p_decision text, p_actor text, p_note text, p_reason text)
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_gate record;
  v_att record;
begin
  update pgflight.approvals
     set decision = p_decision, actor = p_actor, note = p_note, decided_at = pgflight._now()
   where id = p_gate_id
  returning * into v_gate;
  update pgflight.step_attempts a
     set status = 'queued', available_after = pgflight._now()
   where a.step_id = v_gate.step_id and a.status = 'awaiting_approval'
     and not exists (select from pgflight.waits w where w.parked_attempt_id = a.id and w.outcome is null)
  returning a.id, a.run_id into v_att;
  perform pgflight._event((select s.run_id from pgflight.steps s where s.id = v_gate.step_id), v_gate.step_id,
                          v_att.id, case when v_att.id is null then null else 'awaiting_approval' end,
                          case when v_att.id is null then null else 'queued' end,
                          null, p_reason, p_actor,
                          jsonb_build_object('gate_key', v_gate.gate_key, 'decision', p_decision, 'note', p_note));
  if v_att.id is not null then
    perform pgflight._notify_ready();
  end if;
end
$$;
comment on function pgflight._decide(bigint, text, text, text, text) is
  'Internal: record a gate decision and requeue the step parked at it.';

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
create or replace function pgflight._reopen_step(p_step_id bigint, p_actor text, p_reason text, p_note text)
returns bigint
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight._reopen_step(bigint, text, text, text) is
  'Internal: new attempt for a terminal step, ancestors reopened to receive its result.';

commit;
