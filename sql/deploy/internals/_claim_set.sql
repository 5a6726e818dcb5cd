-- Deploy pgflight:internals/_claim_set

begin;

set local role pgflight_owner;

-- Claim ready attempts of several lanes at once (claim cost: one set of statements
-- per call, not one per workspace): lane i is workspace p_lane_ws[i] (and recipe
-- p_lane_recipe[i]: all lanes name a recipe or none does); each workspace p_ws[j] takes at most
-- p_quota[j] over its lanes, its leases counting against the caps p_slots[j] (bits of
-- step_attempts.slots). Candidates in priority order per lane, rows another claimer holds
-- skipped; concurrency keys honoured: a candidate with a key is taken only while the key's leased
-- attempts are under its limit (counted under a try-lock of the key), the others parked
-- (available_after = 'infinity') until a slot is freed. Up to four rounds refill lanes that came
-- short because of keys. Returns the leases, each with its workspace (lease_ws).
CREATE OR REPLACE FUNCTION pgflight._claim_set(p_worker_id bigint, p_lane_ws bigint[], p_lane_recipe text[], p_ws bigint[], p_quota integer[], p_slots smallint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone) RETURNS TABLE(attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint, step_key text, attempt_no integer, recipe text, input jsonb, lease_expires_at timestamp with time zone, deadline_at timestamp with time zone, lease_ws bigint)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
declare
  v_by_recipe boolean := p_lane_recipe[1] is not null;
  v_left integer[] := p_quota;        -- per workspace: still to claim
  v_ask integer[];                    -- per lane: rows to read this round (0: the lane is done)
  v_lane_n integer[];                 -- per lane: rows read this round
  v_ids bigint[];                     -- this round's candidates, in claim order ...
  v_ws bigint[];                      -- ... their workspaces ...
  v_keys text[];                      -- ... keys ...
  v_limits integer[];                 -- ... and key limits
  v_keyed boolean;
  v_take bigint[];
  v_take_ws bigint[];
  v_park bigint[];
  v_busy bigint[];
  v_locked_ws bigint[];
  v_locked_key text[];
  v_skip bigint[] := '{}';
  v_slot smallint;
  v_lease bigint[];
  v_round integer := 0;
  v_asking boolean := false;
  v_one_slot boolean := true;
  v_i integer;
  v_w integer;
begin
  -- (array bookkeeping in PL/pgSQL's simple expressions, not SQL: each SQL expression costs tens
  -- of microseconds, a simple one about one)
  v_ask := array_fill(0, array[cardinality(p_lane_ws)]);
  for v_i in 1 .. cardinality(p_lane_ws) loop
    v_ask[v_i] := coalesce(p_quota[array_position(p_ws, p_lane_ws[v_i])], 0);
    v_asking := v_asking or v_ask[v_i] > 0;
  end loop;
  for v_i in 2 .. cardinality(p_ws) loop
    v_one_slot := v_one_slot and p_slots[v_i] = p_slots[1];
  end loop;
  while v_round < 4 and v_asking loop
    v_round := v_round + 1;
    -- every lane's next ready rows in claim order, in one statement (a lateral read per lane, by
    -- the ready index of the workspace or of the recipe); a workspace with several lanes keeps
    -- the first of its quota in lane order (the rest stay locked, unleased, until commit)
    -- (two laterals, one per kind of lane, each behind a one-time filter: a recipe lane reads
    -- step_attempts_recipe_ready_idx, a workspace lane step_attempts_ws_ready_idx; one lateral
    -- with "recipe is null or" would read neither in a generic plan)
    with cand as materialized (
      select l.i, l.ws, x.id, x.concurrency_key as key, x.concurrency_limit as lim,
             x.priority, x.available_after
        from unnest(p_lane_ws, p_lane_recipe, v_ask) with ordinality l(ws, recipe, ask, i)
        cross join lateral (
          select a.id, a.concurrency_key, a.concurrency_limit, a.priority, a.available_after
            from pgflight.step_attempts a
           where a.recipe = l.recipe and a.workspace_id = l.ws and a.status = 'queued'
             and a.available_after <= p_now and a.available_after < 'infinity'
             and a.id <> all (v_skip)
           order by a.priority desc, a.available_after, a.id
           limit l.ask
             for update skip locked) x
       where v_by_recipe and l.ask > 0
      union all
      select l.i, l.ws, x.id, x.concurrency_key, x.concurrency_limit, x.priority, x.available_after
        from unnest(p_lane_ws, v_ask) with ordinality l(ws, ask, i)
        cross join lateral (
          select a.id, a.concurrency_key, a.concurrency_limit, a.priority, a.available_after
            from pgflight.step_attempts a
           where a.workspace_id = l.ws and a.status = 'queued'
             and a.available_after <= p_now and a.available_after < 'infinity'
             and a.id <> all (v_skip)
           order by a.priority desc, a.available_after, a.id
           limit l.ask
             for update skip locked) x
       where not v_by_recipe and l.ask > 0
    ), ranked as (
      select c.*, q.lft, row_number() over (partition by c.ws order by c.i, c.priority desc, c.available_after, c.id) as rk
        from cand c join unnest(p_ws, v_left) q(ws, lft) on q.ws = c.ws
    )
    select coalesce(array_agg(r.id order by r.i, r.rk) filter (where r.rk <= r.lft), '{}'),
           array_agg(r.ws order by r.i, r.rk) filter (where r.rk <= r.lft),
           array_agg(r.key order by r.i, r.rk) filter (where r.rk <= r.lft),
           array_agg(r.lim order by r.i, r.rk) filter (where r.rk <= r.lft),
           coalesce(bool_or(r.key is not null) filter (where r.rk <= r.lft), false),
           (select array_agg((select count(*) from cand c where c.i = l.i)::integer order by l.i)
              from generate_subscripts(p_lane_ws, 1) l(i))
      into v_ids, v_ws, v_keys, v_limits, v_keyed, v_lane_n
      from ranked r;
    exit when v_ids = '{}';

    if not v_keyed then
      -- the common case: no candidate has a key
      v_take := v_ids;
      v_take_ws := v_ws;
    else
      -- every key of the batch in two statements, whatever their number and workspaces. First
      -- the keys' try-locks (a key another claimer or sweep is counting right now: leave its rows
      -- for later). Then, in a statement of its own so that its snapshot is taken after the
      -- locks and sees every commit they waited for, each locked key's leased count and per
      -- candidate whether it fits under the key's limit (the first candidate's) in claim order.
      -- (a key's lock is its engine_locks row, created in scope order so two claimers creating
      -- the same new keys cannot wait on each other in a cycle; no login can lock it, where an
      -- advisory key could be held by any login and the key's claims came back empty)
      insert into pgflight.engine_locks (scope)
      select x.scope from (select distinct 'key:' || u.ws || ':' || u.key as scope
                             from unnest(v_ws, v_keys) u(ws, key) where u.key is not null) x
       order by x.scope
      on conflict do nothing;
      select coalesce(array_agg(k.ws), '{}'), coalesce(array_agg(k.key), '{}')
        into v_locked_ws, v_locked_key
        from (select distinct u.ws, u.key from unnest(v_ws, v_keys) u(ws, key) where u.key is not null) k
        join (select l.scope from pgflight.engine_locks l
               where l.scope in (select 'key:' || u.ws || ':' || u.key from unnest(v_ws, v_keys) u(ws, key)
                                  where u.key is not null)
                 for update skip locked) l on l.scope = 'key:' || k.ws || ':' || k.key;
      select coalesce(array_agg(c.id order by c.i) filter (where c.key is null or c.rnk <= c.lim - h.held), '{}'),
             coalesce(array_agg(c.ws order by c.i) filter (where c.key is null or c.rnk <= c.lim - h.held), '{}'),
             coalesce(array_agg(c.id) filter (where c.key is not null and c.rnk > c.lim - h.held), '{}'),
             coalesce(array_agg(c.id) filter (where c.key is not null and h.key is null), '{}')
        into v_take, v_take_ws, v_park, v_busy
        from (select u.i, u.id, u.ws, u.key,
                     row_number() over (partition by u.ws, u.key order by u.i) as rnk,
                     first_value(u.lim) over (partition by u.ws, u.key order by u.i) as lim
                from unnest(v_ids, v_ws, v_keys, v_limits) with ordinality u(id, ws, key, lim, i)) c
        left join (select l.ws, l.key, (select count(*) from pgflight.step_attempts a
                                         where a.workspace_id = l.ws and a.concurrency_key = l.key
                                           and a.status in ('claimed', 'running', 'cancel_requested')) as held
                     from unnest(v_locked_ws, v_locked_key) l(ws, key)) h
          on h.ws = c.ws and h.key = c.key;
      v_skip := v_skip || v_busy;
      if v_park <> '{}' then
        update pgflight.step_attempts a set available_after = 'infinity' where a.id = any (v_park);
        -- a key found full parks the rest of its due backlog too (up to 1,000 a round, through
        -- step_attempts_queued_key_idx), so later claims do not meet it again row by row
        update pgflight.step_attempts a set available_after = 'infinity'
         where a.id in (select b.id
                          from (select distinct p.workspace_id, p.concurrency_key from pgflight.step_attempts p
                                 where p.id = any (v_park)) f
                          cross join lateral (
                            select b.id from pgflight.step_attempts b
                             where b.workspace_id = f.workspace_id and b.concurrency_key = f.concurrency_key
                               and b.status = 'queued' and b.available_after <= p_now
                               and b.id <> all (v_take) and b.id <> all (v_skip)
                             order by b.priority desc, b.id
                             limit 1000
                               for update skip locked) b
                         limit 1000);
      end if;
    end if;

    if v_take <> '{}' then
      -- leased at the clock's reading now, after the locks and counts above: claimed_at is then
      -- never earlier than the finish of an attempt this claim counted as gone. One lease
      -- statement per set of caps counted against (one in the common case)
      if v_one_slot then
        return query
          select l.attempt_id, l.fencing_token, l.step_id, l.run_id, l.parent_id, l.step_key, l.attempt_no,
                 l.recipe, l.input, l.lease_expires_at, l.deadline_at, u.ws
            from pgflight._lease_attempts(p_worker_id, v_take, p_lease_s, p_start, pgflight._now(), p_slots[1]) l
            join unnest(v_take, v_take_ws) u(id, ws) on u.id = l.attempt_id;
      else
        for v_slot, v_lease in
          select p_slots[array_position(p_ws, u.ws)], array_agg(u.id)
            from unnest(v_take, v_take_ws) u(id, ws)
           group by 1
        loop
          return query
            select l.attempt_id, l.fencing_token, l.step_id, l.run_id, l.parent_id, l.step_key, l.attempt_no,
                   l.recipe, l.input, l.lease_expires_at, l.deadline_at, u.ws
              from pgflight._lease_attempts(p_worker_id, v_lease, p_lease_s, p_start, pgflight._now(), v_slot) l
              join unnest(v_take, v_take_ws) u(id, ws) on u.id = l.attempt_id;
        end loop;
      end if;
      for v_i in 1 .. cardinality(v_take_ws) loop
        v_w := array_position(p_ws, v_take_ws[v_i]);
        v_left[v_w] := v_left[v_w] - 1;
      end loop;
    end if;
    -- a lane that gave fewer rows than asked for is empty for now; the others ask for what their
    -- workspace still needs
    v_asking := false;
    for v_i in 1 .. cardinality(p_lane_ws) loop
      if v_ask[v_i] > 0 and v_lane_n[v_i] >= v_ask[v_i] then
        v_ask[v_i] := v_left[array_position(p_ws, p_lane_ws[v_i])];
      else
        v_ask[v_i] := 0;
      end if;
      v_asking := v_asking or v_ask[v_i] > 0;
    end loop;
  end loop;
end
$$;

COMMENT ON FUNCTION pgflight._claim_set(p_worker_id bigint, p_lane_ws bigint[], p_lane_recipe text[], p_ws bigint[], p_quota integer[], p_slots smallint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone) IS 'Internal: claim ready attempts of several lanes (workspace, recipe) at once within per-workspace quotas, parking attempts whose concurrency key is full.';

REVOKE ALL ON FUNCTION pgflight._claim_set(p_worker_id bigint, p_lane_ws bigint[], p_lane_recipe text[], p_ws bigint[], p_quota integer[], p_slots smallint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone) FROM PUBLIC;

commit;
