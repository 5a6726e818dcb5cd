-- Revert pgflight:internals/_fair_claim@v0.5.0: restores the previous definition, deploy/internals/_fair_claim@v0.4.0.sql (written by scripts/gen_sql_scripts.py)
-- Defines: _lease_attempts(), _claim_lane(), _ready_lanes(), _queued_recipes(), _bucket_tokens(), _claim_fair().
-- The fair claim (issue 15, DESIGN §9): claim_batch's body after its checks and reclaim.
--
-- How one call chooses work:
--   1. Recipes: with any paused or rate-limited recipe, the claim names its recipes (the ones
--      queued, minus paused ones, each rate-limited one with its bucket's tokens), so paused work
--      is never walked past.
--   2. Lanes: the (workspace, recipe) pairs with queued work, found by a skip scan of the ready
--      indexes (one index probe per workspace or pair, whatever the backlog behind it). Paused
--      workspaces are dropped.
--   3. Global cap (settings.max_in_flight): the batch is cut to the slots this call can take from
--      the cap's stripes (tables/flow_slots) without waiting; unused ones are given back at the end.
--   4. Turns: workspaces are served in a rotation that starts where the previous call left off
--      (sequence claim_turns). Pass one gives each workspace a quota proportional to its share
--      (at least one); pass two fills what is left of the batch from workspaces that had more.
--      So a workspace with ready work is served within ceil(workspaces / batch_size) calls,
--      whatever another workspace's backlog; priority orders work only inside a workspace.
--   5. Each workspace is claimed by statements that read that workspace alone (Citus-friendly):
--      a capped workspace's quota is cut to the slots taken from its stripes (concurrent claimers
--      each take a share of the cap; none skips it, none waits); a rate-limited one takes a
--      try-lock of its own (another claimer serving it right now means this call skips it) and
--      refills its bucket. Each lease records the caps it counts against (step_attempts.slots);
--      the trigger step_attempts_return_slots gives them back when it leaves the leased set.
--   6. Concurrency keys: a candidate with a key is taken only while the key's leased attempts
--      are under its limit (counted under a try-lock of the key); the others are parked
--      (available_after = 'infinity', out of the ready indexes) until a slot is freed.
-- No statement here waits on a lock (SKIP LOCKED, try-locks), so no lock cycle can form.
begin;
set local role pgflight_owner;
drop function pgflight._claim_set(bigint, bigint[], text[], bigint[], integer[], smallint[], double precision, boolean, timestamptz);

-- Lease the given queued attempts (already locked by the caller) to a worker: the fencing token,
-- the lease, the caps it counts against (p_slots, bits of step_attempts.slots), the log. The
-- claim's one write, shared by every lane. Issue 18: a started claim (p_start) takes an events id
-- onto the attempt (claim_event_id; run_events shows it as the 'claimed' row, queued -> running)
-- instead of an events row; a claim without start still writes its events row.
drop function if exists pgflight._claim_fair(bigint, integer, double precision, text[], boolean, timestamptz, bigint[]);
drop function if exists pgflight._claim_lane(bigint, bigint, text, integer, double precision, boolean, timestamptz);
drop function if exists pgflight._lease_attempts(bigint, bigint[], double precision, boolean, timestamptz);

create or replace function pgflight._lease_attempts(
  p_worker_id bigint, p_ids bigint[], p_lease_s double precision, p_start boolean, p_now timestamptz,
  p_slots smallint)
returns table (attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint,
               step_key text, attempt_no integer, recipe text, input jsonb,
               lease_expires_at timestamptz, deadline_at timestamptz)
language plpgsql volatile
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
declare
  v_max_lease double precision := pgflight._limit('lease_s');
  v_max_runtime double precision := pgflight._limit('runtime_s');
begin
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
  'Internal: lease locked queued attempts to a worker (token, lease, caps, events row or claim_event_id).';

-- Claim up to p_limit ready attempts of one workspace (and one recipe, when given), in priority
-- order, honouring concurrency keys; p_slots: the caps each lease counts against. Every statement
-- reads this workspace alone.
create or replace function pgflight._claim_lane(
  p_worker_id bigint, p_workspace_id bigint, p_recipe text, p_limit integer,
  p_lease_s double precision, p_start boolean, p_now timestamptz, p_slots smallint)
returns table (attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint,
               step_key text, attempt_no integer, recipe text, input jsonb,
               lease_expires_at timestamptz, deadline_at timestamptz)
language plpgsql volatile
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
declare
  v_ids bigint[];
  v_keys text[];
  v_limits integer[];
  v_take bigint[];
  v_park bigint[];
  v_busy bigint[];
  v_locked text[];
  v_skip bigint[] := '{}';
  v_got integer := 0;
  v_n integer;
  v_round integer := 0;
  v_asked integer;
begin
  while v_got < p_limit and v_round < 4 loop
    v_round := v_round + 1;
    v_asked := p_limit - v_got;
    -- the next ready rows of this lane in claim order; rows another claimer holds are skipped
    if p_recipe is null then
      select coalesce(array_agg(r.id), '{}'), array_agg(r.concurrency_key), array_agg(r.concurrency_limit)
        into v_ids, v_keys, v_limits
        from (select a.id, a.concurrency_key, a.concurrency_limit
                from pgflight.step_attempts a
               where a.workspace_id = p_workspace_id and a.status = 'queued'
                 and a.available_after <= p_now and a.available_after < 'infinity'
                 and a.id <> all (v_skip)
               order by a.priority desc, a.available_after, a.id
               limit v_asked
                 for update skip locked) r;
    else
      select coalesce(array_agg(r.id), '{}'), array_agg(r.concurrency_key), array_agg(r.concurrency_limit)
        into v_ids, v_keys, v_limits
        from (select a.id, a.concurrency_key, a.concurrency_limit
                from pgflight.step_attempts a
               where a.recipe = p_recipe and a.workspace_id = p_workspace_id and a.status = 'queued'
                 and a.available_after <= p_now and a.available_after < 'infinity'
                 and a.id <> all (v_skip)
               order by a.priority desc, a.available_after, a.id
               limit v_asked
                 for update skip locked) r;
    end if;
    v_n := cardinality(v_ids);
    exit when v_n = 0;

    if (select bool_and(k is null) from unnest(v_keys) k) then
      -- the common case: no candidate has a key
      v_take := v_ids;
    else
      -- every key of the batch in two statements, whatever their number. First the keys'
      -- try-locks (a key another claimer or sweep is counting right now: leave its rows for
      -- later). Then, in a statement of its own so that its snapshot is taken after the locks
      -- and sees every commit they waited for, each locked key's leased count and per candidate
      -- whether it fits under the key's limit (the first candidate's) in claim order.
      select coalesce(array_agg(k.key) filter (where k.got), '{}') into v_locked
        -- _key_lock's expression, written out: a function with a SET clause is never inlined, and
        -- calling it once per key was a tenth of a keyed claim
        from (select x.key, pg_catalog.pg_try_advisory_xact_lock(
                pg_catalog.hashtextextended('pgflight.key:' || p_workspace_id || ':' || x.key, 0)) as got
                from (select distinct y as key from unnest(v_keys) y where y is not null) x) k;
      select coalesce(array_agg(c.id order by c.i) filter (where c.key is null or c.rnk <= c.lim - h.held), '{}'),
             coalesce(array_agg(c.id) filter (where c.key is not null and c.rnk > c.lim - h.held), '{}'),
             coalesce(array_agg(c.id) filter (where c.key is not null and h.key is null), '{}')
        into v_take, v_park, v_busy
        from (select i, v_ids[i] as id, v_keys[i] as key,
                     row_number() over (partition by v_keys[i] order by i) as rnk,
                     first_value(v_limits[i]) over (partition by v_keys[i] order by i) as lim
                from generate_subscripts(v_ids, 1) i) c
        left join (select l.key, (select count(*) from pgflight.step_attempts a
                                   where a.workspace_id = p_workspace_id and a.concurrency_key = l.key
                                     and a.status in ('claimed', 'running', 'cancel_requested')) as held
                     from unnest(v_locked) l(key)) h
          on h.key = c.key;
      v_skip := v_skip || v_busy;
      if v_park <> '{}' then
        update pgflight.step_attempts a set available_after = 'infinity' where a.id = any (v_park);
        -- a key found full parks the rest of its due backlog too (up to 1,000 a call, through
        -- step_attempts_queued_key_idx), so later claims do not meet it again row by row
        update pgflight.step_attempts a set available_after = 'infinity'
         where a.id in (select b.id from pgflight.step_attempts b
                         where b.workspace_id = p_workspace_id
                           and b.concurrency_key in (select k from unnest(v_keys) k where k is not null)
                           and b.status = 'queued' and b.available_after <= p_now
                           and b.id <> all (v_take) and b.id <> all (v_skip)
                           -- only keys this round found full
                           and exists (select from pgflight.step_attempts p
                                        where p.id = any (v_park) and p.concurrency_key = b.concurrency_key)
                         order by b.priority desc, b.id
                         limit 1000
                           for update skip locked);
      end if;
    end if;

    if v_take <> '{}' then
      -- leased at the clock's reading now, after the locks and counts above: claimed_at is then
      -- never earlier than the finish of an attempt this claim counted as gone
      return query select * from pgflight._lease_attempts(p_worker_id, v_take, p_lease_s, p_start, pgflight._now(), p_slots);
      v_got := v_got + cardinality(v_take);
    end if;
    -- fewer ready rows than asked for: the lane is empty for now
    exit when v_n < v_asked;
  end loop;
end
$$;
comment on function pgflight._claim_lane(bigint, bigint, text, integer, double precision, boolean, timestamptz, smallint) is
  'Internal: claim up to p_limit ready attempts of one workspace (and recipe), parking attempts whose concurrency key is full.';

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
  -- 3. the global in-flight cap: the slots this call can take now (from here on, every way out
  -- passes the give-back at the end)
  select s.max_in_flight into v_global from pgflight.settings s;
  if v_global is not null then
    select t.got, t.stripe into v_left, v_global_stripe from pgflight._take_slots(0, v_left) t;
    if v_left <= 0 then
      return;
    end if;
  end if;
  v_total_share := (select sum(x) from unnest(v_share) x);
  v_more := array_fill(false, array[v_n]);

  -- 4. this call's turn: start after the workspaces the previous calls served (with more
  -- workspaces than the batch holds, the next call starts a batch further on)
  v_first := ((nextval('pgflight.claim_turns') * case when v_n > v_left then v_left else 1 end) % v_n)::integer;
  -- quotas: each workspace's share of the batch, rounded down, the remainder one each in turn
  -- order; so a workspace with ready work gets at least one while the batch has room for it
  v_quota := array_fill(0, array[v_n]);
  for v_i in 0 .. v_n - 1 loop
    v_w := (v_first + v_i) % v_n + 1;
    v_quota[v_w] := (v_left * v_share[v_w]) / v_total_share;
  end loop;
  v_q := v_left - (select sum(x) from unnest(v_quota) x);
  for v_i in 0 .. v_n - 1 loop
    exit when v_q <= 0;
    v_w := (v_first + v_i) % v_n + 1;
    v_quota[v_w] := v_quota[v_w] + 1;
    v_q := v_q - 1;
  end loop;

  for v_pass in 1 .. 2 loop
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

      -- 5. a rate-limited workspace: one claimer at a time refills and charges its bucket
      if v_rated[v_w] then
        continue when not pg_catalog.pg_try_advisory_xact_lock(
          pg_catalog.hashtextextended('pgflight.workspace:' || v_ws_id, 0));
        select * into v_lim from pgflight.workspace_limits l where l.workspace_id = v_ws_id;
        if v_lim.starts_per_s is not null then
          v_tokens := pgflight._bucket_tokens(v_lim.tokens, v_lim.refilled_at, v_lim.starts_per_s, v_lim.burst, p_now);
          v_q := least(v_q, floor(v_tokens)::integer);
        end if;
      end if;
      -- a capped workspace: the slots this call can take from its stripes now
      v_ws_taken := 0;
      if v_cap[v_w] is not null and v_q > 0 then
        select t.got, t.stripe into v_ws_taken, v_ws_stripe from pgflight._take_slots(v_ws_id, v_q) t;
        v_q := v_ws_taken;
      end if;
      v_slots := (case when v_global is not null then 1 else 0 end
                  | case when v_cap[v_w] is not null then 2 else 0 end)::smallint;

      v_got_ws := 0;
      if v_q > 0 then
        if v_recipes is null then
          return query select * from pgflight._claim_lane(p_worker_id, v_ws_id, null, v_q, p_lease_s, p_start, p_now, v_slots);
          get diagnostics v_got_ws = row_count;
        else
          -- 6. one lane per recipe of this workspace, each rate-limited recipe within its tokens
          for v_j in 1 .. cardinality(v_lane_ws) loop
            exit when v_got_ws >= v_q;
            continue when v_lane_ws[v_j] <> v_ws_id;
            v_idx := array_position(v_rated_recipes, v_lane_recipe[v_j]);
            v_got := least(v_q - v_got_ws, case when v_idx is null then v_q else v_rated_left[v_idx] end);
            continue when v_got <= 0;
            return query select * from pgflight._claim_lane(p_worker_id, v_ws_id, v_lane_recipe[v_j], v_got,
                                                            p_lease_s, p_start, p_now, v_slots);
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
