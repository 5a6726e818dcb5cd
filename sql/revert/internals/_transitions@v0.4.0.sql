-- Revert pgflight:internals/_transitions@v0.4.0: restores the previous definition, deploy/internals/_transitions@v0.3.0.sql (written by scripts/gen_sql_scripts.py)
-- Defines: _wake(), _cancel_steps(), _cancel_tree(), _tree_steps(), _steps_finished(),
--   _step_finished(), _fail_attempt(), _lock_cascade(), _dead_letter_poisoned(), _reclaim(),
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
--   2. each child pokes its parent: the parents are locked in id order, then each parent's O(1)
--      counter drops by the number of its children that ended here, so of two last children
--      ending together exactly one transaction sees zero (C17);
--   3. a fail-fast parent of a child that ended unsuccessfully is dead-lettered (and its own
--      end goes through here again); otherwise a parent whose counter reached zero wakes, once;
--   4. a root ends its run.
-- Locks: after the finished attempts (the caller's), parent steps in id order, then their parked
-- attempts, then runs: the order of docs/locking.md.
create or replace function pgflight._steps_finished(p_step_ids bigint[], p_finals text[], p_actor text,
                                                    p_now timestamptz)
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_left record;
  v_doomed bigint[];
  v_wake bigint[];
  v_parent bigint;
  v_child bigint;
  v_parent_attempt record;
  v_final text;
begin
  -- 1. what an unsuccessful step left running below it
  for v_left in
    select s.id, s.run_id, f.final
      from unnest(p_step_ids, p_finals) as f(id, final) join pgflight.steps s on s.id = f.id
     where f.final <> 'succeeded' and s.children_pending > 0
     order by s.id
  loop
    perform pgflight._cancel_tree(v_left.run_id, v_left.id, coalesce(p_actor, 'engine'), 'parent ended ' || v_left.final);
    update pgflight.steps set children_pending = 0 where id = v_left.id;
  end loop;

  -- 2. the pokes: lock the parents (id order) in a statement of their own, then decrement
  perform from pgflight.steps p
   where p.id in (select s.parent_id from pgflight.steps s where s.id = any (p_step_ids) and s.parent_id is not null)
   order by p.id
     for update of p;
  with finished as (
    select s.parent_id, count(*)::integer as n, bool_or(f.final <> 'succeeded') as failed
      from unnest(p_step_ids, p_finals) as f(id, final) join pgflight.steps s on s.id = f.id
     where s.parent_id is not null
     group by s.parent_id
  ), poked as (
    update pgflight.steps p
       set children_pending = greatest(p.children_pending - f.n, 0)
      from finished f
     where p.id = f.parent_id
    returning p.id, p.children_pending, p.fail_fast, f.failed
  )
  select array_agg(k.id order by k.id) filter (where k.failed and k.fail_fast),
         array_agg(k.id order by k.id) filter (where not (k.failed and k.fail_fast) and k.children_pending = 0)
    into v_doomed, v_wake
    from poked k;

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

  -- 4. a root ends its run
  update pgflight.runs r
     set status = case f.final when 'succeeded' then 'succeeded' when 'cancelled' then 'cancelled' else 'failed' end,
         finished_at = p_now
    from unnest(p_step_ids, p_finals) as f(id, final) join pgflight.steps s on s.id = f.id
   where s.parent_id is null and r.id = s.run_id and r.status = 'running';
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

-- The lock order of a failure that may cascade (issue 14 case 6). A step that ends unsuccessfully
-- under a parent with fail_fast dead-letters the parent and cancels its siblings (and so on up
-- while the ancestors have fail_fast). Done in that order, the cascade would lock the siblings'
-- attempts after the parent's steps row, against the global order (attempts before steps), and a
-- sibling being completed at the same moment (its attempt, then the parent's row) deadlocks with
-- it. So the caller takes, before any steps row, every live attempt of the subtree the cascade may
-- touch, in the order cancel uses (deepest first, then id). p_nowait (sweeps): raise 55P03 rather
-- than wait, so the sweep leaves the row to its next pass. Returns whether a cascade is possible.
create or replace function pgflight._lock_cascade(p_attempt_id bigint, p_nowait boolean)
returns boolean
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_id bigint;
  v_top bigint;
  v_step record;
begin
  select s.parent_id into v_id
    from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id where a.id = p_attempt_id;
  loop
    exit when v_id is null;
    select s.fail_fast, s.parent_id into v_step from pgflight.steps s where s.id = v_id;
    exit when not coalesce(v_step.fail_fast, false);
    v_top := v_id;
    v_id := v_step.parent_id;
  end loop;
  if v_top is null then
    return false;
  end if;
  if p_nowait then
    perform from (
      select a.id from pgflight.step_attempts a
        join unnest(pgflight._tree_steps(null, v_top)) as t(id) on t.id = a.step_id
        join pgflight.steps s on s.id = a.step_id
       where a.status in ('queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children', 'awaiting_approval')
       order by s.depth desc, a.id
         for update of a nowait) l;
  else
    perform from (
      select a.id from pgflight.step_attempts a
        join unnest(pgflight._tree_steps(null, v_top)) as t(id) on t.id = a.step_id
        join pgflight.steps s on s.id = a.step_id
       where a.status in ('queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children', 'awaiting_approval')
       order by s.depth desc, a.id
         for update of a) l;
  end if;
  return true;
end
$$;
comment on function pgflight._lock_cascade(bigint, boolean) is
  'Internal: lock, deepest first, the live attempts a fail-fast cascade from this attempt may touch; '
  'false when no ancestor has fail_fast.';

-- The last resort of a sweep (issue 14): a row whose processing raised is ended on its own —
-- dead letter with the real error (SQLSTATE and message) and an events row — so the sweep goes on
-- with the rest. If even that raises (the cascade of the dead letter is what fails), the attempt
-- is dead-lettered without the cascade; if that fails too, it is left as it is, with a WARNING.
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
  exception when others then
    raise warning 'pgflight: attempt % could not be processed nor dead-lettered: % (%)', p_attempt_id, sqlerrm, sqlstate;
  end;
end
$$;
comment on function pgflight._dead_letter_poisoned(bigint, text, text, text) is
  'Internal: a sweep''s last resort: dead-letter one attempt with the error that stopped it, and go on.';

-- Reclaim up to p_limit expired leases and overrun deadlines. Rows are locked with SKIP LOCKED,
-- so concurrent sweepers (cron, claim_batch) never process the same attempt twice, and a row
-- that a worker is completing right now is simply left for the next pass. Each row is processed
-- in a block of its own (issue 14): a row that raises is dead-lettered with its real error
-- (_dead_letter_poisoned) and the sweep — and the claim_batch it runs in — goes on; a row whose
-- fail-fast cascade would wait for a lock (_lock_cascade, NOWAIT) is left for the next pass. The
-- blocks cost a subtransaction per reclaimed row only: nothing when no lease has lapsed.
create or replace function pgflight._reclaim(p_now timestamptz, p_limit integer)
returns integer
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_row record;
  v_count integer := 0;
begin
  for v_row in
    select a.id, a.status, a.step_id, a.run_id, a.worker_id, a.lease_expires_at, a.fencing_token,
           (a.status = 'cancel_requested' or s.failed_attempts + 1 >= s.max_attempts) as ends_step
      from pgflight.step_attempts a
      join pgflight.steps s on s.id = a.step_id
     where a.status in ('claimed', 'running', 'cancel_requested') and a.lease_expires_at < p_now
     order by a.lease_expires_at
     limit p_limit
       for update of a skip locked
  loop
    v_count := v_count + 1;
    begin
      if v_row.ends_step then
        perform pgflight._lock_cascade(v_row.id, true);
      end if;
      if v_row.status = 'cancel_requested' then
        update pgflight.step_attempts set status = 'cancelled', finished_at = p_now where id = v_row.id;
        perform pgflight._event(v_row.run_id, v_row.step_id, v_row.id, 'cancel_requested', 'cancelled',
                                v_row.worker_id, 'cancelled', 'reclaim', jsonb_build_object('cause', 'lease_expired'));
        perform pgflight._step_finished(v_row.step_id, 'cancelled', 'reclaim');
      else
        perform pgflight._fail_attempt(v_row.id, v_row.status, 'lease_expired',
          jsonb_build_object('message', 'lease expired: the worker stopped heartbeating',
                             'lease_expires_at', v_row.lease_expires_at, 'fencing_token', v_row.fencing_token),
          true, null, 'lease_expired', 'reclaim');
      end if;
    exception
      when lock_not_available then
        v_count := v_count - 1;  -- a sibling is in use: the next pass takes this row
      when others then
        perform pgflight._dead_letter_poisoned(v_row.id, sqlstate, sqlerrm, 'reclaim');
    end;
  end loop;

  for v_row in
    select a.id, a.status, a.deadline_at, s.failed_attempts + 1 >= s.max_attempts as ends_step
      from pgflight.step_attempts a
      join pgflight.steps s on s.id = a.step_id
     where a.status in ('claimed', 'running') and a.deadline_at < p_now
     order by a.deadline_at
     limit greatest(p_limit - v_count, 0)
       for update of a skip locked
  loop
    v_count := v_count + 1;
    begin
      if v_row.ends_step then
        perform pgflight._lock_cascade(v_row.id, true);
      end if;
      perform pgflight._fail_attempt(v_row.id, v_row.status, 'timed_out',
        jsonb_build_object('message', 'deadline exceeded: the attempt ran past max_runtime_s',
                           'deadline_at', v_row.deadline_at),
        true, null, 'deadline_exceeded', 'reclaim');
    exception
      when lock_not_available then
        v_count := v_count - 1;
      when others then
        perform pgflight._dead_letter_poisoned(v_row.id, sqlstate, sqlerrm, 'reclaim');
    end;
  end loop;
  return v_count;
end
$$;
comment on function pgflight._reclaim(timestamptz, integer) is
  'Internal: reclaim at most p_limit attempts whose lease lapsed or whose deadline passed; a row that '
  'raises is dead-lettered alone, a row whose cascade is locked waits for the next pass.';

-- The core of successful completion, set-based, shared by complete_step and complete_batch:
-- a batch of n attempts costs a handful of statements, not n of each. For each attempt given
-- (parallel arrays) the outcome is 'succeeded', or 'lease_lost' / 'cancelled' when it is not
-- held with that token (then nothing changed for it). Compare-and-swap on (id, token, leased
-- status): of a completion racing a reclaim or a cancel, whichever locks the row first wins.
-- What follows (pokes, wakes, runs) is _steps_finished, the same routine as every other path.
-- Locks are taken in a fixed order — attempts by id, then parents by id, then runs — so batches
-- cannot deadlock with each other, with heartbeat (ids ascending) or with cancel (attempts first).
-- Each lock is taken in a statement of its own, so the next statement sees the row as locked.
create or replace function pgflight._complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[],
                                        p_now timestamptz)
returns table (attempt_id bigint, outcome text)
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_ids bigint[];
  v_old text[];
  v_steps bigint[];
begin
  -- 1. lock the attempts still held with these tokens by workers of this login (issue 13: one
  -- primary-key probe of workers per attempt; another login's attempt is not held by the caller)
  select array_agg(l.id order by l.id), array_agg(l.status order by l.id) into v_ids, v_old from (
    select a.id, a.status
      from pgflight.step_attempts a
      join (select distinct u.id, u.token from unnest(p_attempt_ids, p_tokens) as u(id, token)) q
        on q.id = a.id and q.token = a.fencing_token
     where a.status in ('claimed', 'running')
       and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
     order by a.id
       for update of a) l;

  if v_ids is not null then
    -- 2. succeed them, with an events row each
    with done as (
      update pgflight.step_attempts a
         set status = 'succeeded', finished_at = p_now, result = q.result,
             started_at = coalesce(a.started_at, a.claimed_at)
        from unnest(p_attempt_ids, p_results) as q(id, result)
       where a.id = q.id and a.id = any (v_ids) and a.status in ('claimed', 'running')
      returning a.id, a.step_id, a.run_id, a.worker_id
    ), logged as (
      insert into pgflight.events (at, run_id, step_id, attempt_id, from_status, to_status, worker_id, reason)
      select p_now, d.run_id, d.step_id, d.id, o.old_status, 'succeeded', d.worker_id, 'succeeded'
        from done d join unnest(v_ids, v_old) as o(id, old_status) on o.id = d.id
    )
    select array_agg(d.step_id) into v_steps from done d;

    -- 3. what follows the steps' ends (pokes, wakes, runs), written once for every path
    perform pgflight._steps_finished(v_steps, array_fill('succeeded'::text, array[cardinality(v_steps)]), null, p_now);
  end if;

  return query
  select q.id,
         case when a.status = 'succeeded' and a.fencing_token = q.token and q.id = any (v_ids) then 'succeeded'
              when a.status in ('cancel_requested', 'cancelled') and a.fencing_token = q.token then 'cancelled'
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
-- the real error kept); the others complete through _complete_many as usual. Every attempt of
-- the batch is locked first, in id order, before any steps row (docs/locking.md). Outcome per row,
-- in the order given: succeeded | failed | lease_lost | cancelled (stale rows logged).
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
  -- issue 13: a current token of another login's attempt is a leaked one (ZF012, nothing written)
  perform pgflight._require_own_attempt(q.id, q.token, 'complete_batch')
     from unnest(p_attempt_ids, p_tokens) as q(id, token);
  perform from (
    select a.id from pgflight.step_attempts a
      join unnest(p_attempt_ids, p_tokens) as q(id, token) on q.id = a.id and q.token = a.fencing_token
     where a.status in ('claimed', 'running')
     order by a.id
       for update of a) l;
  for v_i in 1 .. v_n loop
    continue when p_errors[v_i] is null;
    select a.status into v_status from pgflight.step_attempts a
     where a.id = p_attempt_ids[v_i] and a.fencing_token = p_tokens[v_i] and a.status in ('claimed', 'running');
    if found then
      perform pgflight._fail_attempt(p_attempt_ids[v_i], v_status, 'failed', p_errors[v_i], false, null,
                                     'result_refused');
      v_out[v_i] := 'failed';
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
-- locked, and requeue the step if it is parked at that gate.
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

commit;
