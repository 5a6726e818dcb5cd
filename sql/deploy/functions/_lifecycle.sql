-- Deploy pgflight:functions/_lifecycle
-- requires: functions/_internals
-- Internal transitions shared by every path that ends, retries or cancels an attempt, so that
-- each path (complete, fail, reclaim, deadline, cancel, budget, gate) runs the same hooks:
-- the parent poke (fan-in) and the run's own status.
begin;
set local role pgflight_owner;

-- Requeue a parked parent when its last child ended. Compare-and-swap on awaiting_children, so
-- a parent is woken at most once per parking however many callers race here.
create function pgflight._wake(p_step_id bigint, p_reason text, p_actor text default null)
returns boolean
language plpgsql volatile
set search_path = ''
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
create function pgflight._cancel_steps(p_step_ids bigint[], p_actor text, p_reason text)
returns table (cancelled integer, cancel_requested integer)
language plpgsql volatile
set search_path = ''
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
create function pgflight._cancel_tree(p_run_id bigint, p_step_id bigint, p_actor text, p_reason text)
returns table (cancelled integer, cancel_requested integer)
language plpgsql volatile
set search_path = ''
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
create function pgflight._tree_steps(p_run_id bigint, p_step_id bigint)
returns bigint[]
language sql stable
set search_path = ''
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

-- The hook of every terminal transition of a step (succeeded, dead_letter, cancelled), in the
-- transaction that makes it: a root ends its run; a child pokes its parent, whose O(1) counter
-- tells whether this was the last child; a step that ends unsuccessfully cancels what it left
-- running below it (C18).
create function pgflight._step_finished(p_step_id bigint, p_final text, p_actor text default null)
returns void
language plpgsql volatile
set search_path = ''
as $$
declare
  v_step record;
  v_pending integer;
  v_fail_fast boolean;
  v_parent_attempt record;
begin
  select s.id, s.run_id, s.parent_id, s.children_pending into v_step
    from pgflight.steps s where s.id = p_step_id;

  if p_final <> 'succeeded' and v_step.children_pending > 0 then
    -- the step itself is already terminal: this cancels what it left running below it
    perform pgflight._cancel_tree(v_step.run_id, p_step_id, coalesce(p_actor, 'engine'), 'parent ended ' || p_final);
    update pgflight.steps set children_pending = 0 where id = p_step_id;
  end if;

  if v_step.parent_id is null then
    update pgflight.runs r
       set status = case p_final when 'succeeded' then 'succeeded' when 'cancelled' then 'cancelled' else 'failed' end,
           finished_at = pgflight._now()
     where r.id = v_step.run_id and r.status = 'running';
    return;
  end if;

  -- The poke: one row update on the parent, serialised by its row lock, so of two last
  -- children finishing together exactly one sees zero.
  update pgflight.steps p
     set children_pending = greatest(p.children_pending - 1, 0)
   where p.id = v_step.parent_id
  returning p.children_pending, p.fail_fast into v_pending, v_fail_fast;

  if p_final <> 'succeeded' and v_fail_fast then
    select a.* into v_parent_attempt from pgflight.step_attempts a
     where a.step_id = v_step.parent_id and a.status = 'awaiting_children' for update;
    if found then
      update pgflight.step_attempts
         set status = 'dead_letter', finished_at = pgflight._now(), reason = 'child_failed',
             error = jsonb_build_object('message', 'a child step ended ' || p_final, 'child_step_id', p_step_id)
       where id = v_parent_attempt.id;
      perform pgflight._event(v_parent_attempt.run_id, v_parent_attempt.step_id, v_parent_attempt.id,
                              'awaiting_children', 'dead_letter', null, 'child_failed', p_actor,
                              jsonb_build_object('child_step_id', p_step_id));
      perform pgflight._step_finished(v_parent_attempt.step_id, 'dead_letter', p_actor);
    end if;
  elsif v_pending = 0 then
    perform pgflight._wake(v_step.parent_id, 'parent_resumed', p_actor);
  end if;
end
$$;
comment on function pgflight._step_finished(bigint, text, text) is
  'Internal: hook of every terminal step transition: ends the run (root), pokes the parent '
  '(child), cancels the subtree left behind by an unsuccessful step.';

-- End a leased attempt unsuccessfully and decide what follows: a new queued attempt after the
-- backoff, or the dead letter at the ceiling (or at once when not retryable). Used by fail_step,
-- the reclaim sweep (lease_expired) and the deadline sweep (timed_out), so the ceiling is
-- enforced identically on every path (C07). The caller holds the attempt's row lock.
create function pgflight._fail_attempt(
  p_attempt_id bigint, p_from text, p_status text, p_error jsonb, p_retryable boolean,
  p_retry_after_s double precision, p_reason text, p_actor text default null)
returns table (outcome text, next_attempt_id bigint, available_after timestamptz)
language plpgsql volatile
set search_path = ''
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

  v_delay := coalesce(p_retry_after_s, pgflight._backoff_s(v_step.failed_attempts + 1, v_step.backoff));
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

-- Reclaim up to p_limit expired leases and overrun deadlines. Rows are locked with SKIP LOCKED,
-- so concurrent sweepers (cron, claim_batch) never process the same attempt twice, and a row
-- that a worker is completing right now is simply left for the next pass.
create function pgflight._reclaim(p_now timestamptz, p_limit integer)
returns integer
language plpgsql volatile
set search_path = ''
as $$
declare
  v_row record;
  v_count integer := 0;
begin
  for v_row in
    select a.id, a.status, a.step_id, a.run_id, a.worker_id, a.lease_expires_at, a.fencing_token
      from pgflight.step_attempts a
     where a.status in ('claimed', 'running', 'cancel_requested') and a.lease_expires_at < p_now
     order by a.lease_expires_at
     limit p_limit
       for update skip locked
  loop
    v_count := v_count + 1;
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
  end loop;

  for v_row in
    select a.id, a.status, a.deadline_at
      from pgflight.step_attempts a
     where a.status in ('claimed', 'running') and a.deadline_at < p_now
     order by a.deadline_at
     limit greatest(p_limit - v_count, 0)
       for update skip locked
  loop
    v_count := v_count + 1;
    perform pgflight._fail_attempt(v_row.id, v_row.status, 'timed_out',
      jsonb_build_object('message', 'deadline exceeded: the attempt ran past max_runtime_s',
                         'deadline_at', v_row.deadline_at),
      true, null, 'deadline_exceeded', 'reclaim');
  end loop;
  return v_count;
end
$$;
comment on function pgflight._reclaim(timestamptz, integer) is
  'Internal: reclaim at most p_limit attempts whose lease lapsed or whose deadline passed.';

commit;
