-- Deploy pgflight:functions/complete_step
-- requires: functions/_lifecycle
begin;
set local role pgflight_owner;

-- The core of successful completion, set-based, shared by complete_step and complete_batch:
-- a batch of n attempts costs a handful of statements, not n of each. For each attempt given
-- (parallel arrays) the outcome is 'succeeded', or 'lease_lost' / 'cancelled' when it is not
-- held with that token (then nothing changed for it). Compare-and-swap on (id, token, leased
-- status): of a completion racing a reclaim or a cancel, whichever locks the row first wins.
-- Locks are taken in a fixed order — attempts by id, then parents by id, then runs — so batches
-- cannot deadlock with each other, with heartbeat (ids ascending) or with cancel (attempts first).
-- Each lock is taken in a statement of its own, so the next statement sees the row as locked.
create function pgflight._complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[],
                                        p_now timestamptz)
returns table (attempt_id bigint, outcome text)
language plpgsql volatile
set search_path = ''
as $$
declare
  v_ids bigint[];
  v_old text[];
  v_parents bigint[];
  v_root_runs bigint[];
  v_wake bigint[];
  v_parent bigint;
begin
  -- 1. lock the attempts still held with these tokens
  select array_agg(l.id order by l.id), array_agg(l.status order by l.id) into v_ids, v_old from (
    select a.id, a.status
      from pgflight.step_attempts a
      join (select distinct u.id, u.token from unnest(p_attempt_ids, p_tokens) as u(id, token)) q
        on q.id = a.id and q.token = a.fencing_token
     where a.status in ('claimed', 'running')
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
    -- each finished step's parent (to poke) or, for a root, its run (to end), by primary key
    select array_agg(s.parent_id) filter (where s.parent_id is not null),
           array_agg(s.run_id) filter (where s.parent_id is null)
      into v_parents, v_root_runs
      from done d join pgflight.steps s on s.id = d.step_id;

    -- 3. the fan-in pokes, one per parent for all its children finished here: lock the parents
    -- (id order), then decrement; a parent whose counter reaches zero wakes, exactly once
    perform from pgflight.steps p
      join (select distinct u.id from unnest(v_parents) as u(id)) q on q.id = p.id
     order by p.id
       for update of p;
    with finished as (
      select u.parent_id, count(*)::integer as n from unnest(v_parents) as u(parent_id) group by u.parent_id
    ), poked as (
      update pgflight.steps p
         set children_pending = greatest(p.children_pending - f.n, 0)
        from finished f
       where p.id = f.parent_id
      returning p.id, p.children_pending
    )
    select array_agg(k.id order by k.id) into v_wake from poked k where k.children_pending = 0;
    if v_wake is not null then
      foreach v_parent in array v_wake loop
        perform pgflight._wake(v_parent, 'parent_resumed');
      end loop;
    end if;

    -- 4. a root that succeeded ends its run
    update pgflight.runs r
       set status = 'succeeded', finished_at = p_now
      from unnest(v_root_runs) as u(id)
     where r.id = u.id and r.status = 'running';
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

-- Complete an attempt this caller holds, storing p_result (any JSON, or null). The step becomes
-- succeeded; its parent is poked; a root ends its run. Errors: ZF001 lease lost (reclaimed,
-- superseded token, already finished), ZF002 cancelled, ZF003 unknown attempt. A rejected call
-- changes nothing; record it with record_stale_write, or use complete_batch, which records it.
create function pgflight.complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb default null)
returns table (attempt_id bigint, status text)
language plpgsql volatile security definer
set search_path = ''
as $$
begin
  if (select c.outcome from pgflight._complete_many(array[p_attempt_id], array[p_token], array[p_result],
                                                     pgflight._now()) c) <> 'succeeded' then
    perform pgflight._reject_write(p_attempt_id, p_token, 'complete_step');
  end if;
  return query select p_attempt_id, 'succeeded'::text;
end
$$;
comment on function pgflight.complete_step(bigint, bigint, jsonb) is
  'Complete a held attempt with a result. Errors: ZF001 lease lost, ZF002 cancelled, ZF003 unknown.';

-- Complete many attempts in one transaction (the worker's batched hot path). Parallel arrays.
-- Never raises for a stale attempt: it reports outcome lease_lost or cancelled for that row,
-- records a stale_result_rejected event, and completes the others.
-- Errors: 22023 arrays of different lengths.
create function pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[])
returns table (attempt_id bigint, outcome text)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_i integer := 0;
begin
  if coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_tokens), 0)
     or coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_results), 0) then
    raise exception using errcode = '22023', message = 'attempt ids, tokens and results differ in length',
      hint = 'Pass one token and one result per attempt id, in the same order.';
  end if;
  -- outcomes come back in the order given, so the i-th row goes with the i-th token
  for attempt_id, outcome in
    select c.attempt_id, c.outcome from pgflight._complete_many(p_attempt_ids, p_tokens, p_results, pgflight._now()) c
  loop
    v_i := v_i + 1;
    if outcome <> 'succeeded' then
      perform pgflight._record_stale(attempt_id, p_tokens[v_i], 'complete');
    end if;
    return next;
  end loop;
end
$$;
comment on function pgflight.complete_batch(bigint[], bigint[], jsonb[]) is
  'Complete many held attempts; per row outcome succeeded | lease_lost | cancelled. Errors: 22023.';

grant execute on function pgflight.complete_step(bigint, bigint, jsonb),
                          pgflight.complete_batch(bigint[], bigint[], jsonb[]) to pgflight_worker;

commit;
