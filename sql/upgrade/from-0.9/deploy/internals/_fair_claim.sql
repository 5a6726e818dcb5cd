-- Deploy pgflight:internals/_fair_claim
-- Defines: _lease_attempts(), _claim_set(), _ready_lanes(), _queued_recipes(), _bucket_tokens(), _claim_fair().
-- The fair claim (issue 15, DESIGN §9): claim_batch's body after its checks and reclaim.
--
-- How one call chooses work:
--   1. Recipes: with any paused or rate-limited recipe, the claim names its recipes (the ones
--      queued, minus paused ones, each rate-limited one with its bucket's tokens), so paused work
--      is never walked past.
--   2. Lanes: the (workspace, recipe) pairs with queued work, found by a skip scan of the ready
--      indexes (one index probe per workspace or pair, whatever the backlog behind it). Paused
--      workspaces are dropped.
--   3. In-flight caps (settings.max_in_flight, a workspace's max_in_flight): the slots this call
--      can take now from the caps' stripes (tables/flow_slots) without waiting, in ONE statement
--      for the global cap and every capped workspace (_take_slots_all; issue 15/18: it was one
--      call of three statements per capped workspace). The batch is cut to the global slots, a
--      workspace's quota to its own; unused ones are given back, again in one statement.
--   3a. The global cap shared fairly: while more than one (unpaused) workspace has queued work,
--      none takes more of the global cap than ceil(cap / those workspaces), counting the leases
--      it holds now (its leased attempts, at most its share of them, read by
--      step_attempts_leased_ws_idx). A workspace alone with queued work may take the whole cap.
--      The workspaces are counted whatever recipes this call names, so a claim of one recipe
--      cannot see fewer of them. Each claim counts the committed leases: claims of one workspace
--      that overlap in time may together pass its share by what they took at that instant, never
--      the global cap (its stripes). A lease under a cap is clamped to settings.max_lease_s_capped,
--      so capacity a workspace took while it was alone comes back within that time.
--   4. Turns: workspaces are served in a rotation that starts where the previous call left off
--      (sequence claim_turns). Pass one gives each workspace a quota proportional to its share
--      (at least one); pass two fills what is left of the batch from workspaces that had more.
--      So a workspace with ready work is served within ceil(workspaces / batch_size) calls,
--      whatever another workspace's backlog; priority orders work only inside a workspace.
--   5. Pass one claims every workspace's quota at once (_claim_set): one statement reads every
--      lane's candidates (a lateral index read per lane, rows other claimers hold skipped), the
--      keys are checked in two statements for the whole batch, and the leases written in one
--      (one per set of caps counted against). Each lease records the caps it counts against
--      (step_attempts.slots); the trigger step_attempts_return_slots gives them back when it
--      leaves the leased set. With a rate-limited workspace or recipe in play, and in pass two,
--      workspaces are claimed one by one instead: a rate-limited one locks its workspace_limits
--      row SKIP LOCKED (another claimer serving it right now means this call skips it) and
--      refills its bucket.
--   6. Concurrency keys: a candidate with a key is taken only while the key's leased attempts
--      are under its limit (counted under the key's engine_locks row, locked SKIP LOCKED); the
--      others are parked
--      (available_after = 'infinity', out of the ready indexes) until a slot is freed.
-- No statement here waits on a lock (SKIP LOCKED), so no lock cycle can form; the one exception,
-- a key row created by another claimer that has not committed, is waited for in scope order.
-- No lock the claim takes can be held by a login (engine rows only; no advisory keys).
begin;
set local role pgflight_owner;

-- Lease the given queued attempts (already locked by the caller) to a worker: the fencing token,
-- the lease, the caps it counts against (p_slots, bits of step_attempts.slots), the log. The
-- claim's one write, shared by every lane. Issue 18: a started claim (p_start) takes an events id
-- onto the attempt (claim_event_id; run_events shows it as the 'claimed' row, queued -> running)
-- instead of an events row; a claim without start still writes its events row.
drop function if exists pgflight._claim_fair(bigint, integer, double precision, text[], boolean, timestamptz, bigint[]);
drop function if exists pgflight._claim_lane(bigint, bigint, text, integer, double precision, boolean, timestamptz);
drop function if exists pgflight._lease_attempts(bigint, bigint[], double precision, boolean, timestamptz);
-- issue 15/18 claim cost: _claim_set claims every lane of a call at once in place of _claim_lane
drop function if exists pgflight._claim_lane(bigint, bigint, text, integer, double precision, boolean, timestamptz, smallint);

create or replace function pgflight._lease_attempts(
  p_worker_id bigint, p_ids bigint[], p_lease_s double precision, p_start boolean, p_now timestamptz,
  p_slots smallint)
returns table (attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint,
               step_key text, attempt_no integer, recipe text, input jsonb,
               lease_expires_at timestamptz, deadline_at timestamptz)
language plpgsql volatile
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
-- issue 18: the generic plan is made at the first claim of a session; made while steps was small
-- it hash-joined a sequential scan of steps, and kept doing so as steps grew (0.9 ms a claim at
-- 5,000 steps, linear). Each leased row's step is read by primary key.
set enable_seqscan = off
as $$
declare
  v_max_lease double precision := pgflight._limit('lease_s');
  v_max_runtime double precision := pgflight._limit('runtime_s');
begin
  -- a lease counted against an in-flight cap (global or its workspace's) is clamped to the
  -- ceiling of capped leases: one claim cannot hold a capped slot for a day (read only then)
  if p_slots <> 0 then
    select least(v_max_lease, s.max_lease_s_capped) into v_max_lease from pgflight.settings s;
  end if;
  -- PL/pgSQL rather than SQL: its plan is cached across calls, a SQL function's is not; and the
  -- generic plan from the first call on (plan_cache_mode): a custom plan was planned again on
  -- every call, a large part of the claim's cost
  return query
  with claimed as (
    update pgflight.step_attempts a
       set status = case when p_start then 'running' else 'claimed' end, worker_id = p_worker_id,
           fencing_token = nextval('pgflight.fencing_tokens'),
           claimed_at = p_now, slots = p_slots,
           started_at = case when p_start then p_now end,
           -- clamped to the documented maxima (issue 14): a step stored before the options were
           -- checked (lease_s 1e13) cannot make this set-based claim raise for everyone
           lease_s = least(coalesce(s.lease_s, p_lease_s), v_max_lease),
           lease_expires_at = p_now + make_interval(secs => least(coalesce(s.lease_s, p_lease_s), v_max_lease)),
           deadline_at = p_now + make_interval(secs => least(s.max_runtime_s, v_max_runtime)),
           claim_event_id = case when p_start then nextval('pgflight.events_id_seq') end
      from pgflight.steps s
     where a.id = any (p_ids) and s.id = a.step_id
    returning a.id, a.fencing_token, a.step_id, a.run_id, s.parent_id, s.step_key, a.attempt_no,
              a.recipe, s.input, a.lease_expires_at, a.deadline_at, a.status
  ), logged as (
    -- the events row of a claim without start, in the same statement
    insert into pgflight.events (at, run_id, step_id, attempt_id, from_status, to_status, worker_id, reason)
    select p_now, c.run_id, c.step_id, c.id, 'queued', c.status, p_worker_id, 'claimed' from claimed c
     where not p_start
  )
  select c.id, c.fencing_token, c.step_id, c.run_id, c.parent_id, c.step_key, c.attempt_no, c.recipe,
         c.input, c.lease_expires_at, c.deadline_at
    from claimed c;
end
$$;
comment on function pgflight._lease_attempts(bigint, bigint[], double precision, boolean, timestamptz, smallint) is
  'Internal: lease locked queued attempts to a worker (token, lease, caps, events row or claim_event_id); '
  'a lease under an in-flight cap is clamped to settings.max_lease_s_capped.';

-- Claim ready attempts of several lanes at once (issue 15/18 claim cost: one set of statements
-- per call, not one per workspace): lane i is workspace p_lane_ws[i] (and recipe
-- p_lane_recipe[i]: all lanes name a recipe or none does); each workspace p_ws[j] takes at most
-- p_quota[j] over its lanes, its leases counting against the caps p_slots[j] (bits of
-- step_attempts.slots). Candidates in priority order per lane, rows another claimer holds
-- skipped; concurrency keys honoured: a candidate with a key is taken only while the key's leased
-- attempts are under its limit (counted under a try-lock of the key), the others parked
-- (available_after = 'infinity') until a slot is freed. Up to four rounds refill lanes that came
-- short because of keys. Returns the leases, each with its workspace (lease_ws).
create or replace function pgflight._claim_set(
  p_worker_id bigint, p_lane_ws bigint[], p_lane_recipe text[], p_ws bigint[], p_quota integer[],
  p_slots smallint[], p_lease_s double precision, p_start boolean, p_now timestamptz)
returns table (attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint,
               step_key text, attempt_no integer, recipe text, input jsonb,
               lease_expires_at timestamptz, deadline_at timestamptz, lease_ws bigint)
language plpgsql volatile
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
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
comment on function pgflight._claim_set(bigint, bigint[], text[], bigint[], integer[], smallint[], double precision, boolean, timestamptz) is
  'Internal: claim ready attempts of several lanes (workspace, recipe) at once within per-workspace quotas, parking attempts whose concurrency key is full.';

-- The workspaces with queued (unparked) work: a skip scan of step_attempts_ws_ready_idx, one
-- probe per workspace. With p_recipes, the (workspace, recipe) pairs instead, through
-- step_attempts_recipe_ready_idx, so a rare recipe's lanes are found without walking the others.
create or replace function pgflight._ready_lanes(p_recipes text[])
returns table (workspace_id bigint, recipe text)
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
begin
  if p_recipes is null then
    return query
    with recursive w(id) as (
      (select a.workspace_id from pgflight.step_attempts a
        where a.status = 'queued' and a.available_after < 'infinity'
        order by a.workspace_id limit 1)
      union all
      select (select a.workspace_id from pgflight.step_attempts a
               where a.status = 'queued' and a.available_after < 'infinity' and a.workspace_id > w.id
               order by a.workspace_id limit 1)
        from w where w.id is not null
    )
    select w.id, null::text from w where w.id is not null;
  else
    return query
    with recursive w(recipe, id) as (
      select r.recipe, (select a.workspace_id from pgflight.step_attempts a
                         where a.recipe = r.recipe and a.status = 'queued' and a.available_after < 'infinity'
                         order by a.workspace_id limit 1)
        from (select distinct x as recipe from unnest(p_recipes) x where x is not null) r
      union all
      select w.recipe, (select a.workspace_id from pgflight.step_attempts a
                         where a.recipe = w.recipe and a.status = 'queued' and a.available_after < 'infinity'
                           and a.workspace_id > w.id
                         order by a.workspace_id limit 1)
        from w where w.id is not null
    )
    select w.id, w.recipe from w where w.id is not null;
  end if;
end
$$;
comment on function pgflight._ready_lanes(text[]) is
  'Internal: the workspaces (with p_recipes: workspace and recipe pairs) that have queued work; one index probe each.';

-- The recipes with queued (unparked) work: a skip scan of step_attempts_recipe_ready_idx.
create or replace function pgflight._queued_recipes()
returns text[]
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  with recursive r(recipe) as (
    (select a.recipe from pgflight.step_attempts a
      where a.status = 'queued' and a.available_after < 'infinity' order by a.recipe limit 1)
    union all
    select (select a.recipe from pgflight.step_attempts a
             where a.status = 'queued' and a.available_after < 'infinity' and a.recipe > r.recipe
             order by a.recipe limit 1)
      from r where r.recipe is not null
  )
  select coalesce(array_agg(r.recipe), '{}') from r where r.recipe is not null
$$;
comment on function pgflight._queued_recipes() is 'Internal: the recipes that have queued work; one index probe each.';

-- A token bucket's tokens now: refilled at p_rate per second since p_refilled_at, at most p_burst.
-- Starts full. Never raises: the constraints bound rate and burst.
create or replace function pgflight._bucket_tokens(
  p_tokens double precision, p_refilled_at timestamptz, p_rate double precision, p_burst double precision,
  p_now timestamptz)
returns double precision
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
  select case when p_tokens is null or p_refilled_at is null then p_burst
              else least(p_burst, p_tokens + greatest(0, extract(epoch from p_now - p_refilled_at)::double precision) * p_rate)
         end
$$;
comment on function pgflight._bucket_tokens(double precision, timestamptz, double precision, double precision, timestamptz) is
  'Internal: a token bucket''s level at p_now.';

-- Claim up to p_batch_size attempts fairly across workspaces (see the head of this file).
-- Called by claim_batch after its checks and reclaim. p_workspaces: the workspaces of the login's
-- worker lane (issue 13; null: every workspace).
create or replace function pgflight._claim_fair(
  p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[],
  p_start boolean, p_now timestamptz, p_workspaces bigint[])
returns table (attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint,
               step_key text, attempt_no integer, recipe text, input jsonb,
               lease_expires_at timestamptz, deadline_at timestamptz)
language plpgsql volatile
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
declare
  v_left integer := p_batch_size;
  v_global integer;
  v_recipes text[] := p_recipes;
  v_rl record;
  v_rated_recipes text[] := '{}';   -- rate-limited recipes of this call ...
  v_rated_left integer[] := '{}';   -- ... and the starts each may still take
  v_lane_ws bigint[];
  v_lane_recipe text[];
  v_ws bigint[];
  v_share integer[];
  v_cap integer[];
  v_rated boolean[];
  v_more boolean[];
  v_quota integer[];
  v_total_share integer;
  v_n integer;
  v_first integer;
  v_pass integer;
  v_w integer;
  v_ws_id bigint;
  v_q integer;
  v_got_ws integer;
  v_got integer;
  v_tokens double precision;
  v_lim pgflight.workspace_limits;
  v_idx integer;
  v_global_stripe smallint;
  v_ws_taken integer;
  v_ws_stripe smallint;
  v_slots smallint;
  v_fast boolean;
  v_scopes bigint[];
  v_wants integer[];
  v_t_scope bigint[];
  v_t_got integer[];
  v_t_stripe smallint[];
  v_taken integer[];
  v_ws_got integer[];
  v_lease_ws bigint;
  v_slots_ws smallint[];
  v_back integer[];
  v_fair integer[];                 -- per workspace: global slots it may still take (null: no limit)
  v_queued_ws bigint[];
  v_busy integer;
  v_fair_share integer;
begin
  -- 1. paused and rate-limited recipes: name the recipes this call may claim
  if exists (select from pgflight.recipe_limits) then
    if v_recipes is null then
      v_recipes := pgflight._queued_recipes();
    end if;
    v_recipes := array(select r from unnest(v_recipes) r
                        where not exists (select from pgflight.recipe_limits l
                                           where l.recipe = r and l.paused_at is not null));
    for v_rl in
      select l.recipe, l.starts_per_s, l.burst, l.tokens, l.refilled_at from pgflight.recipe_limits l
       where l.recipe = any (v_recipes) and l.starts_per_s is not null
       order by l.recipe
         for update skip locked
    loop
      v_tokens := pgflight._bucket_tokens(v_rl.tokens, v_rl.refilled_at, v_rl.starts_per_s, v_rl.burst, p_now);
      update pgflight.recipe_limits l set tokens = v_tokens, refilled_at = p_now where l.recipe = v_rl.recipe;
      v_rated_recipes := v_rated_recipes || v_rl.recipe;
      v_rated_left := v_rated_left || floor(v_tokens)::integer;
    end loop;
    -- a rate-limited recipe whose bucket another claimer holds right now is left to that claimer
    v_recipes := array(select r from unnest(v_recipes) r
                        where r = any (v_rated_recipes)
                           or not exists (select from pgflight.recipe_limits l
                                           where l.recipe = r and l.starts_per_s is not null));
    if v_recipes = '{}' then
      return;
    end if;
  end if;

  -- 2. lanes with queued work, and the limits of their workspaces (paused ones dropped)
  select array_agg(l.workspace_id), array_agg(l.recipe) into v_lane_ws, v_lane_recipe
    from pgflight._ready_lanes(v_recipes) l;
  if v_lane_ws is null then
    return;
  end if;
  select array_agg(w.id order by w.id), array_agg(coalesce(l.share, 1) order by w.id),
         array_agg(l.max_in_flight order by w.id), array_agg(l.starts_per_s is not null order by w.id)
    into v_ws, v_share, v_cap, v_rated
    from (select distinct x as id from unnest(v_lane_ws) x
           where p_workspaces is null or x = any (p_workspaces)) w  -- issue 13: the login's worker lane
    left join pgflight.workspace_limits l on l.workspace_id = w.id
   where l.paused_at is null;
  v_n := coalesce(cardinality(v_ws), 0);
  if v_n = 0 then
    return;
  end if;
  select s.max_in_flight into v_global from pgflight.settings s;
  -- 3a. the global cap shared fairly among the workspaces with queued work (see the head of this
  -- file): each served workspace may take at most its share less the leases it holds now. Only
  -- under a global cap, and only with another workspace waiting.
  if v_global is not null then
    if v_recipes is null then
      v_queued_ws := v_lane_ws;                 -- one lane per workspace: these are they
    else
      v_queued_ws := array(select l.workspace_id from pgflight._ready_lanes(null) l);
    end if;
    select count(*)::integer into v_busy from unnest(v_queued_ws) q(id)
     where not exists (select from pgflight.workspace_limits l where l.workspace_id = q.id and l.paused_at is not null);
    if v_busy > 1 then
      v_fair_share := ceil(v_global::numeric / v_busy)::integer;
    end if;
    -- while everything leased under the cap and this whole batch fit in one share, no workspace
    -- can pass its share: the count below is skipped (the stripes' held is at least what is
    -- leased under the cap; returns not yet folded only lower it). So a cap far from full costs
    -- one read of its stripes, and the count reads leases only while the cap is contended.
    if v_fair_share is not null
       and (select coalesce(sum(f.held), 0) from pgflight.flow_slots f where f.scope = 0) + v_left > v_fair_share then
      -- (at most the share of each workspace's leases read: the count costs no more than that)
      select array_agg(greatest(0, v_fair_share - h.n) order by w.o) into v_fair
        from unnest(v_ws) with ordinality w(id, o)
        cross join lateral (
          select count(*)::integer as n
            from (select from pgflight.step_attempts a
                   where a.workspace_id = w.id and a.status in ('claimed', 'running', 'cancel_requested')
                   limit v_fair_share) x) h;
      v_q := 0;
      for v_i in 1 .. v_n loop
        v_q := v_q + v_fair[v_i];
      end loop;
      v_left := least(v_left, v_q);
      if v_left <= 0 then
        return;
      end if;
    end if;
  end if;
  -- no rate limit in play: pass one claims every workspace's quota with one set of statements
  -- (_claim_set), its caps' slots taken in one statement beforehand; otherwise workspace by
  -- workspace, each rate-limited one under its own try-lock
  v_fast := not (true = any (v_rated)) and v_rated_recipes = '{}';
  v_total_share := 0;
  for v_i in 1 .. v_n loop
    v_total_share := v_total_share + v_share[v_i];
  end loop;
  v_more := array_fill(false, array[v_n]);
  v_ws_got := array_fill(0, array[v_n]);
  v_taken := array_fill(null::integer, array[v_n]);

  -- 4. this call's turn: start after the workspaces the previous calls served (with more
  -- workspaces than the batch holds, the next call starts a batch further on)
  v_first := ((nextval('pgflight.claim_turns') * case when v_n > v_left then v_left else 1 end) % v_n)::integer;
  for v_round in 1 .. 2 loop
    -- quotas: each workspace's share of the batch, rounded down, the remainder one each in turn
    -- order; so a workspace with ready work gets at least one while the batch has room for it
    v_quota := array_fill(0, array[v_n]);
    for v_i in 0 .. v_n - 1 loop
      v_w := (v_first + v_i) % v_n + 1;
      v_quota[v_w] := (v_left * v_share[v_w]) / v_total_share;
    end loop;
    v_q := v_left;
    for v_i in 1 .. v_n loop
      v_q := v_q - v_quota[v_i];
    end loop;
    for v_i in 0 .. v_n - 1 loop
      exit when v_q <= 0;
      v_w := (v_first + v_i) % v_n + 1;
      v_quota[v_w] := v_quota[v_w] + 1;
      v_q := v_q - 1;
    end loop;
    if v_fair is not null then
      for v_i in 1 .. v_n loop
        v_quota[v_i] := least(v_quota[v_i], v_fair[v_i]);
      end loop;
    end if;
    exit when v_round = 2;
    -- 3. the in-flight caps: the slots this call can take now, in one statement for the global
    -- cap (the whole batch) and, without rate limits, every capped workspace (its quota). A
    -- global cap that leaves less than the batch: the quotas again, of what it left. From here
    -- on, every way out passes the give-backs
    v_scopes := case when v_global is not null then array[0::bigint] else '{}' end;
    v_wants := case when v_global is not null then array[v_left] else '{}' end;
    if v_fast then
      for v_i in 1 .. v_n loop
        if v_cap[v_i] is not null and v_quota[v_i] > 0 then
          v_scopes := v_scopes || v_ws[v_i];
          v_wants := v_wants || v_quota[v_i];
        end if;
      end loop;
    end if;
    exit when v_scopes = '{}';
    select array_agg(t.scope), array_agg(t.got), array_agg(t.stripe)
      into v_t_scope, v_t_got, v_t_stripe
      from pgflight._take_slots_all(v_scopes, v_wants) t;
    for v_i in 1 .. cardinality(v_t_scope) loop
      v_w := array_position(v_ws, v_t_scope[v_i]);
      if v_w is not null then
        v_taken[v_w] := v_t_got[v_i];
      end if;
    end loop;
    exit when v_global is null;
    v_idx := array_position(v_t_scope, 0::bigint);
    v_global_stripe := v_t_stripe[v_idx];
    if v_t_got[v_idx] <= 0 then
      perform pgflight._give_slots_back(v_t_scope, v_t_stripe, v_t_got);
      return;
    end if;
    exit when v_t_got[v_idx] >= v_left;
    v_left := v_t_got[v_idx];
  end loop;

  if v_fast then
    -- pass one in one go: each workspace's quota, cut to the slots taken from its stripes
    v_slots_ws := array_fill(0::smallint, array[v_n]);
    for v_i in 1 .. v_n loop
      if v_taken[v_i] is not null then
        v_quota[v_i] := least(v_quota[v_i], v_taken[v_i]);
      end if;
      v_slots_ws[v_i] := ((case when v_global is not null then 1 else 0 end)
                          | (case when v_cap[v_i] is not null then 2 else 0 end))::smallint;
    end loop;
    for attempt_id, fencing_token, step_id, run_id, parent_id, step_key, attempt_no, recipe, input,
        lease_expires_at, deadline_at, v_lease_ws in
      -- (lanes of workspaces not served here, paused or outside the login's lane, ask for nothing)
      select * from pgflight._claim_set(p_worker_id, v_lane_ws, v_lane_recipe, v_ws, v_quota, v_slots_ws,
                                        p_lease_s, p_start, p_now)
    loop
      v_w := array_position(v_ws, v_lease_ws);
      v_ws_got[v_w] := v_ws_got[v_w] + 1;
      return next;
    end loop;
    for v_i in 1 .. v_n loop
      v_left := v_left - v_ws_got[v_i];
      v_more[v_i] := v_quota[v_i] > 0 and v_ws_got[v_i] >= v_quota[v_i];
    end loop;
    -- the workspaces' slots taken and not used go back, in one statement
    if v_t_scope <> '{}' then
      v_back := array_fill(0, array[cardinality(v_t_scope)]);
      for v_i in 1 .. cardinality(v_t_scope) loop
        v_w := array_position(v_ws, v_t_scope[v_i]);
        if v_w is not null then
          v_back[v_i] := v_t_got[v_i] - v_ws_got[v_w];
        end if;
      end loop;
      if v_back <> array_fill(0, array[cardinality(v_t_scope)]) then
        perform pgflight._give_slots_back(v_t_scope, v_t_stripe, v_back);
      end if;
    end if;
  end if;

  for v_pass in 1 .. 2 loop
    continue when v_pass = 1 and v_fast;
    -- pass two only when some workspace came up short and another may have more
    exit when v_pass = 2 and (v_left <= 0 or not (true = any (v_more)));
    for v_i in 0 .. v_n - 1 loop
      exit when v_left <= 0;
      v_w := (v_first + v_i) % v_n + 1;
      continue when v_pass = 1 and v_quota[v_w] = 0;
      continue when v_pass = 2 and not v_more[v_w];
      v_ws_id := v_ws[v_w];
      v_lim := null;
      v_q := least(case when v_pass = 1 then v_quota[v_w] else v_left end, v_left);
      if v_fair is not null then
        v_q := least(v_q, v_fair[v_w] - v_ws_got[v_w]);  -- 3a: its share of the global cap
        continue when v_q <= 0;
      end if;

      -- 5. a rate-limited workspace: one claimer at a time refills and charges its bucket
      -- (its workspace_limits row, locked SKIP LOCKED: another claimer serving it right now
      -- means this call skips it; an advisory key before, which any login could hold)
      if v_rated[v_w] then
        select * into v_lim from pgflight.workspace_limits l where l.workspace_id = v_ws_id
           for no key update skip locked;
        continue when not found;
        if v_lim.starts_per_s is not null then
          v_tokens := pgflight._bucket_tokens(v_lim.tokens, v_lim.refilled_at, v_lim.starts_per_s, v_lim.burst, p_now);
          v_q := least(v_q, floor(v_tokens)::integer);
        end if;
      end if;
      -- a capped workspace: the slots this call can take from its stripes now
      v_ws_taken := 0;
      if v_cap[v_w] is not null and v_q > 0 then
        select t.got, t.stripe into v_ws_taken, v_ws_stripe from pgflight._take_slots_all(array[v_ws_id], array[v_q]) t;
        v_q := v_ws_taken;
      end if;
      v_slots := (case when v_global is not null then 1 else 0 end
                  | case when v_cap[v_w] is not null then 2 else 0 end)::smallint;

      v_got_ws := 0;
      if v_q > 0 then
        if v_recipes is null then
          return query
            select c.attempt_id, c.fencing_token, c.step_id, c.run_id, c.parent_id, c.step_key, c.attempt_no,
                   c.recipe, c.input, c.lease_expires_at, c.deadline_at
              from pgflight._claim_set(p_worker_id, array[v_ws_id], array[null::text], array[v_ws_id], array[v_q],
                                       array[v_slots], p_lease_s, p_start, p_now) c;
          get diagnostics v_got_ws = row_count;
        else
          -- 6. one lane per recipe of this workspace, each rate-limited recipe within its tokens
          for v_j in 1 .. cardinality(v_lane_ws) loop
            exit when v_got_ws >= v_q;
            continue when v_lane_ws[v_j] <> v_ws_id;
            v_idx := array_position(v_rated_recipes, v_lane_recipe[v_j]);
            v_got := least(v_q - v_got_ws, case when v_idx is null then v_q else v_rated_left[v_idx] end);
            continue when v_got <= 0;
            return query
              select c.attempt_id, c.fencing_token, c.step_id, c.run_id, c.parent_id, c.step_key, c.attempt_no,
                     c.recipe, c.input, c.lease_expires_at, c.deadline_at
                from pgflight._claim_set(p_worker_id, array[v_ws_id], array[v_lane_recipe[v_j]], array[v_ws_id],
                                         array[v_got], array[v_slots], p_lease_s, p_start, p_now) c;
            get diagnostics v_got = row_count;
            v_got_ws := v_got_ws + v_got;
            if v_idx is not null then
              v_rated_left[v_idx] := v_rated_left[v_idx] - v_got;
            end if;
          end loop;
        end if;
      end if;
      if v_lim.starts_per_s is not null then
        update pgflight.workspace_limits l set tokens = v_tokens - v_got_ws, refilled_at = p_now
         where l.workspace_id = v_ws_id;
      end if;
      -- the workspace's slots this call took and did not use go back to a stripe it holds
      if v_ws_taken > v_got_ws then
        update pgflight.flow_slots s set held = s.held - (v_ws_taken - v_got_ws)
         where s.scope = v_ws_id and s.stripe = v_ws_stripe;
      end if;
      v_left := v_left - v_got_ws;
      v_ws_got[v_w] := v_ws_got[v_w] + v_got_ws;
      v_more[v_w] := v_got_ws >= v_q and v_q > 0;
    end loop;
  end loop;
  if v_global is not null and v_left > 0 then
    update pgflight.flow_slots s set held = s.held - v_left where s.scope = 0 and s.stripe = v_global_stripe;
  end if;

  -- what the rate-limited recipes took
  for v_idx in 1 .. cardinality(v_rated_recipes) loop
    update pgflight.recipe_limits l
       set tokens = l.tokens - (floor(l.tokens)::integer - v_rated_left[v_idx])
     where l.recipe = v_rated_recipes[v_idx];
  end loop;
end
$$;
comment on function pgflight._claim_fair(bigint, integer, double precision, text[], boolean, timestamptz, bigint[]) is
  'Internal: claim_batch''s fair claim across workspaces with caps, keys, rate limits and pause.';

commit;
