-- The 0.9 plan's functions and comments with their history references in words, as the
-- new plan deploys them: run by pgflight migrate after the check against schema.dump.sql.
set local role pgflight_owner;

CREATE OR REPLACE FUNCTION pgflight._agent_fence(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_operation text) RETURNS pgflight.agent_runs
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
declare
  v_run pgflight.agent_runs;
begin
  select r.* into v_run
    from pgflight.step_attempts a
    join pgflight.agent_runs r on r.step_id = a.step_id
   where a.id = p_attempt_id and a.fencing_token = p_token and a.status in ('claimed', 'running')
     and r.id = p_agent_run_id
     -- only the login whose worker holds the attempt (else ZF012 from _reject_write)
     and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
     for share of a for update of r;
  if found then
    return v_run;
  end if;
  perform 1 from pgflight.step_attempts a join pgflight.workers w on w.id = a.worker_id
   where a.id = p_attempt_id and a.fencing_token = p_token and a.status in ('claimed', 'running')
     and w.login = session_user;
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, p_operation);
  end if;
  raise exception using
    errcode = 'ZF003',
    message = format('unknown agent run %s for attempt %s', p_agent_run_id, p_attempt_id),
    hint    = 'Use the agent_run_id that begin_agent_run returned for this step.';
end
$$;

CREATE OR REPLACE FUNCTION pgflight._claim_fair(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_start boolean, p_now timestamp with time zone, p_workspaces bigint[]) RETURNS TABLE(attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint, step_key text, attempt_no integer, recipe text, input jsonb, lease_expires_at timestamp with time zone, deadline_at timestamp with time zone)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
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
           where p_workspaces is null or x = any (p_workspaces)) w  -- the login's worker lane
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

CREATE OR REPLACE FUNCTION pgflight._complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_now timestamp with time zone) RETURNS TABLE(attempt_id bigint, outcome text)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    AS $$
declare
  v_ids bigint[];
  v_steps bigint[];
  v_children boolean;
begin
  with locked as (
    -- 1. lock the attempts still held with these tokens by workers of this login (one
    -- primary-key probe of workers per attempt; another login's attempt is not held by the caller),
    -- in id order (the sort below the row locks), each with its result: an attempt given twice
    -- with its token keeps the first result given.
    -- Each given attempt is probed by primary key (a LATERAL subquery behind OFFSET 0, which the
    -- planner keeps as the inner side of a nested loop), and its status and login are checked on
    -- the locked row (the row as it is now, after the lock). Written as a join with the status in
    -- its WHERE, the generic plan this function runs on could read the partial index of the
    -- leased attempts instead: after an ANALYZE that saw few leases it estimated that index at
    -- one row and scanned all of it once per given attempt (CI: a 10,000-attempt
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
    -- 2. succeed them. A success from running takes an events id onto the attempt
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

CREATE OR REPLACE FUNCTION pgflight._fail_attempt(p_attempt_id bigint, p_from text, p_status text, p_error jsonb, p_retryable boolean, p_retry_after_s double precision, p_reason text, p_actor text DEFAULT NULL::text) RETURNS TABLE(outcome text, next_attempt_id bigint, available_after timestamp with time zone)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

  -- clamped to [0, 30 days] whatever was stored or passed: this runs inside a
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

CREATE OR REPLACE FUNCTION pgflight._lease_attempts(p_worker_id bigint, p_ids bigint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone, p_slots smallint) RETURNS TABLE(attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint, step_key text, attempt_no integer, recipe text, input jsonb, lease_expires_at timestamp with time zone, deadline_at timestamp with time zone)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    AS $$
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
           -- clamped to the documented maxima: a step stored before the options were
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

CREATE OR REPLACE FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- PL/pgSQL rather than SQL (claim cost): a SQL function with a SET clause is never
  -- inlined and its query is planned on every call (measured 0.3 ms per claim_batch with
  -- _lane_workspaces); PL/pgSQL caches the plan for the session
  return exists (select from pgflight.workspace_grants g
                  where g.login = session_user
                    and (g.lane = p_lane or p_lane = 'reader')
                    and (g.workspace_id is null or g.workspace_id = p_workspace_id))
      or coalesce((select r.rolsuper from pg_catalog.pg_roles r where r.rolname = session_user), false);
end
$$;

CREATE OR REPLACE FUNCTION pgflight._option_spec() RETURNS TABLE(scope text, key text, kind text, min_value numeric, max_value numeric, choices text[], default_value text, doc text)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  values
    ('step', 'priority', 'integer', -2147483648, 2147483647, null::text[], '0 (a child: its parent''s)',
     'Higher is claimed first.'),
    ('step', 'max_attempts', 'integer', 1, 100000, null, 'settings.default_max_attempts (a child: its parent''s)',
     'Attempts before the dead letter; every failure, lapse and timeout counts.'),
    ('step', 'lease_s', 'number', 0.001, 604800, null, 'claim_batch''s p_lease_s (a child: its parent''s)',
     'Seconds of lease per claim and per heartbeat.'),
    ('step', 'max_runtime_s', 'number', 0.001, 31536000, null, 'none (a child: its parent''s)',
     'Seconds an attempt may run from its claim before the deadline sweep times it out.'),
    ('step', 'backoff', 'backoff', null, null, null, '{"base_s": 1, "factor": 2, "max_s": 300, "jitter": 0.2}',
     'Retry delay min(max_s, base_s * factor^(n-1)) * (1 +/- jitter), n the failures so far.'),
    ('step', 'concurrency_key', 'string', 1, 200, null, 'none (a child: its own, never inherited)',
     'At most concurrency_limit attempts of the workspace''s steps with this key are leased at once.'),
    ('step', 'concurrency_limit', 'integer', 1, 1000000, null, '1', 'The limit of concurrency_key; needs concurrency_key.'),
    ('backoff', 'base_s', 'number', 0, 86400, null, '1', 'First retry delay in seconds.'),
    ('backoff', 'factor', 'number', 1, 100, null, '2', 'Growth per failure.'),
    ('backoff', 'max_s', 'number', 0, 2592000, null, '300', 'Cap of the delay in seconds; reached, it stays there.'),
    ('backoff', 'jitter', 'number', 0, 1, null, '0.2', 'Random spread: 0.2 is plus or minus 20 %.'),
    ('submit_run', 'idempotency_key', 'string', 1, 512, null, 'none',
     'Same key in the workspace: the same run (ZF004 with another input).'),
    ('submit_run', 'not_before', 'timestamptz', null, null, null, 'now',
     'The root step is not claimable before this time (ISO 8601 with a UTC offset, required); excludes delay_s.'),
    ('submit_run', 'delay_s', 'number', 0, 1000000000, null, '0',
     'The root step is claimable this many seconds from now, on the server''s clock; excludes not_before.'),
    ('submit_run', 'max_usd', 'number', 0, 1000000000, null, 'the workspace''s max_run_usd',
     'USD budget of the whole run tree.'),
    ('submit_run', 'max_wall_s', 'number', 0.001, 31536000, null, 'none', 'Wall-time budget of the run tree in seconds.'),
    ('submit_run', 'max_iterations', 'integer', 1, 1000000, null, '25 per agent', 'Model calls per agent in the run.'),
    ('submit_run', 'max_tool_calls', 'integer', 0, 1000000, null, '50 per agent', 'Tool calls per agent in the run.'),
    ('submit_run', 'submitted_by', 'string', 1, 256, null, 'session_user', 'Who submitted, for the events log.'),
    ('submit_run', 'traceparent', 'string', 1, 128, null, 'none',
     'W3C trace context the run joins (kept in its options; read back by run_trace_context).'),
    ('spawn_children', 'fail_fast', 'boolean', null, null, null, 'false',
     'The first child that ends unsuccessfully fails the parent and cancels its siblings.'),
    ('fail_step', 'retryable', 'boolean', null, null, null, 'true', 'false: the dead letter at once.'),
    ('fail_step', 'retry_after_s', 'number', 0, 2592000, null, 'the step''s backoff',
     'Seconds before the retry; replaces the backoff and still spends an attempt.'),
    ('release_step', 'retry_after_s', 'number', 0, 2592000, null, '0',
     'Seconds before the released step may be claimed again (a rate limit''s Retry-After); no attempt spent.'),
    ('claim_batch', 'start', 'boolean', null, null, null, 'false',
     'Claimed attempts go straight to running (saves start_step).'),
    ('register_worker', 'hostname', 'string', 0, 256, null, 'none', 'Host of the worker process.'),
    ('register_worker', 'pid', 'integer', 0, 2147483647, null, 'none', 'Process id of the worker.'),
    ('register_worker', 'recipes', 'string[]', 0, 10000, null, 'none', 'Recipe names the worker serves (each at most 256 characters).'),
    ('create_workspace', 'daily_usd_cap', 'number', 0, 1000000000, null, 'none', 'USD per UTC day across the workspace.'),
    ('create_workspace', 'max_run_usd', 'number', 0, 1000000000, null, 'none', 'Default USD budget of each run.'),
    ('request_approval', 'expires_in_s', 'number', 0.001, 31536000, null, 'never',
     'Seconds until the default decision applies.'),
    ('request_approval', 'default_decision', 'enum', null, null, array['approve', 'reject'], 'reject',
     'The decision expire_approvals applies at expiry.'),
    ('begin_agent_run', 'model', 'string', 1, 256, null, 'required on the first call', 'The model the agent calls.'),
    ('begin_agent_run', 'system', 'string', 0, 16777216, null, '''''', 'The system prompt.'),
    ('begin_agent_run', 'task', 'string', 0, 16777216, null, '''''', 'The first user message (iteration 0).'),
    ('begin_agent_run', 'max_iterations', 'integer', 1, 1000000, null, 'the run''s, else 25', 'Model calls allowed.'),
    ('begin_agent_run', 'max_tool_calls', 'integer', 0, 1000000, null, 'the run''s, else 50', 'Tool calls allowed.'),
    ('begin_agent_run', 'max_usd', 'number', 0, 1000000000, null, 'none',
     'USD budget of this agent and every descendant.'),
    ('begin_agent_run', 'max_wall_s', 'number', 0.001, 31536000, null, 'none',
     'Wall-time budget in seconds of this agent''s tree.'),
    ('record_model_call', 'stop_reason', 'string', 0, 256, null, 'none', 'The response''s stop_reason.'),
    ('record_model_call', 'retries', 'integer', 0, 1000000, null, '0', 'Transient errors retried before this answer.'),
    ('record_model_call', 'mark_tools', 'boolean', null, null, null, 'false',
     'Also mark the response''s tool calls in flight.'),
    ('record_orphan_cost', 'stop_reason', 'string', 0, 256, null, 'none', 'The response''s stop_reason.'),
    ('record_orphan_cost', 'retries', 'integer', 0, 1000000, null, '0', 'Transient errors retried before this answer.'),
    ('record_orphan_cost', 'why', 'string', 0, 1000, null, 'none', 'Why record_model_call refused it (kept in the budget log).'),
    ('record_trace', 'seq', 'integer', 0, 2147483647, null, 'next free >= 2000', 'Position in the iteration.'),
    ('record_trace', 'tool_use_id', 'string', 0, 256, null, 'none', 'The tool call this block belongs to.'),
    ('record_trace', 'tool_name', 'string', 0, 256, null, 'none', 'The tool''s name.'),
    ('record_trace', 'status', 'string', 1, 64, null, 'completed', 'The block''s status.'),
    ('record_trace', 'tokens', 'integer', 0, 2147483647, null, 'length / 4', 'Token estimate of the block.'),
    ('wait_event', 'timeout_s', 'number', 0, 3153600000, null, 'none: it waits until an event comes',
     'Seconds from the first call with this wait key until the wait times out and returns default.'),
    ('wait_event', 'default', 'json', null, null, null, 'null',
     'The JSON payload a timed-out wait returns (at most settings.max_event_payload_bytes, nested at most settings.max_json_depth).'),
    ('emit_event', 'event_id', 'string', 1, 200, null, 'a random uuid',
     'Idempotency key in the workspace: the same id again records nothing and wakes nothing (kept settings.event_retention_s).'),
    -- fork_agent's patch: what the fork changes from iteration k on (the step input keys of the agent recipe)
    ('fork_agent', 'system', 'string', 0, 16777216, null, 'the original''s', 'The system prompt from iteration k on.'),
    ('fork_agent', 'model', 'string', 1, 256, null, 'the original''s', 'The model asked from iteration k on.'),
    ('fork_agent', 'provider', 'string', 1, 256, null, 'the original''s', 'The model provider (anthropic, openai, offline, ...).'),
    ('fork_agent', 'tools', 'string[]', 0, 1000, null, 'the original''s', 'The tool names the fork offers the model.'),
    ('fork_agent', 'max_tokens', 'integer', 1, 1000000, null, 'the original''s', 'max_tokens of each model call.'),
    ('fork_agent', 'max_iterations', 'integer', 1, 1000000, null, 'the original''s',
     'Model calls allowed, the k-1 reused iterations included.'),
    ('fork_agent', 'max_tool_calls', 'integer', 0, 1000000, null, 'the original''s',
     'Tool calls allowed, the reused iterations'' calls included.'),
    ('fork_agent', 'max_usd', 'number', 0, 1000000000, null, 'the original agent''s max_usd',
     'USD budget of the fork and its sub-agents (its own budget; the reused iterations cost 0).'),
    ('fork_agent', 'max_wall_s', 'number', 0.001, 31536000, null, 'the original agent''s max_wall_s',
     'Wall-time budget in seconds of the fork''s tree, from the fork.'),
    ('fork_agent', 'tool_results', 'object', 0, 1000, null, 'none',
     'Results that replace those of iteration k-1''s tool calls: tool_use id -> a string or an array of content blocks.')
$$;

CREATE OR REPLACE FUNCTION pgflight._reclaim_picked(p_now timestamp with time zone, p_ids bigint[]) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $_$
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
      -- queue_delay_s), which run_events shows as the retry_scheduled row (one events
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
        -- clamped to [0, 30 days] whatever was stored, as _fail_attempt
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
      -- step's), so the fill trigger (step_attempts_fill_flow) has nothing to do.
      -- Their one foreign key (step_attempts_step_id_fkey) holds by construction: each
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
$_$;

CREATE OR REPLACE FUNCTION pgflight._set_paused(p_kind text, p_name text, p_pause boolean, p_note text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint;
  v_changed boolean;
begin
  if length(p_note) > 1000 then
    raise exception using errcode = '22023', message = 'note is too long',
      detail = format('%s characters; at most 1000', length(p_note));
  end if;
  -- a workspace needs the operator lane on it; a recipe spans every workspace
  v_ws := case when p_kind = 'workspace' then pgflight._workspace_id(p_name) end;
  perform pgflight._require_lane('operator', v_ws,
                                 case when p_pause then 'pause_' else 'resume_' end || p_kind);
  if p_kind = 'workspace' then
    if p_pause then
      insert into pgflight.workspace_limits (workspace_id) values (v_ws) on conflict do nothing;
    end if;
    update pgflight.workspace_limits l
       set paused_at = case when p_pause then pgflight._now() end,
           paused_by = case when p_pause then session_user::text end,
           updated_at = pgflight._now()
     where l.workspace_id = v_ws and (l.paused_at is null) = p_pause;
    v_changed := found;
  else
    if p_name is null or btrim(p_name) = '' or length(p_name) > 200 then
      raise exception using errcode = '22023', message = 'recipe is required',
        hint = 'Pass a recipe name of at most 200 characters.';
    end if;
    if p_pause then
      insert into pgflight.recipe_limits (recipe) values (p_name) on conflict do nothing;
    end if;
    update pgflight.recipe_limits l
       set paused_at = case when p_pause then pgflight._now() end,
           paused_by = case when p_pause then session_user::text end,
           updated_at = pgflight._now()
     where l.recipe = p_name and (l.paused_at is null) = p_pause;
    v_changed := found;
    -- a row with no limit and no pause is removed: the claim then skips the recipe checks entirely
    delete from pgflight.recipe_limits l where l.recipe = p_name and l.starts_per_s is null and l.paused_at is null;
  end if;
  if v_changed then
    perform pgflight._event(null, null, null, null, null, null,
                            p_kind || case when p_pause then '_paused' else '_resumed' end, session_user::text,
                            jsonb_build_object(p_kind, p_name, 'note', p_note));
    if not p_pause then
      perform pgflight._notify_ready();
    end if;
  end if;
  return v_changed;
end
$$;

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

CREATE OR REPLACE FUNCTION pgflight.agent_runs_by_status(p_status text DEFAULT 'succeeded'::text, p_after bigint DEFAULT 0, p_limit integer DEFAULT 1000) RETURNS TABLE(agent_run_id bigint, step_id bigint, run_id bigint, model text, system_prompt text, iterations integer, usd numeric, result jsonb)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select r.id, r.step_id, r.run_id, r.model, r.system_prompt, r.iterations, r.usd, a.result
    from pgflight.agent_runs r
    join pgflight.steps s on s.id = r.step_id
    join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
   cross join (select pgflight._lane_workspaces('reader') as ids) ws  -- the login's workspaces
   where a.status = p_status and r.id > p_after
     and (ws.ids is null or exists (select from pgflight.runs x where x.id = r.run_id and x.workspace_id = any (ws.ids)))
   order by r.id
   limit pgflight._check_limit(p_limit)  -- 22023 for a negative limit
$$;

CREATE OR REPLACE FUNCTION pgflight.approve(p_step_id bigint, p_decision text, p_actor text, p_note text DEFAULT NULL::text, p_gate_key text DEFAULT NULL::text, p_payload jsonb DEFAULT NULL::jsonb) RETURNS TABLE(step_id bigint, gate_key text, decision text, applied boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_key text := p_gate_key;
  v_gate record;
begin
  if p_decision is null or p_decision not in ('approve', 'reject') then
    raise exception using errcode = '22023', message = 'decision must be approve or reject',
      detail = format('got %L', p_decision);
  end if;
  if p_payload is not null then
    perform pgflight._require_cap('max_approval_request_bytes',
                                  (select s.max_approval_request_bytes from pgflight.settings s),
                                  octet_length(p_payload::text), 'approval payload (bytes)');
    perform pgflight._require_json_depth(p_payload, 'approval payload');
  end if;
  perform pgflight._require_lane_on_step('operator', p_step_id, 'approve');  -- tenants
  if not exists (select from pgflight.steps s where s.id = p_step_id) then
    raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
  end if;
  if v_key is not null then  -- a gate key is a name: capped like request_approval's
    perform pgflight._require_cap('max_name_bytes', (select s.max_name_bytes from pgflight.settings s),
                                  octet_length(v_key), 'gate key (bytes)');
  else
    select g.gate_key into v_key from pgflight.approvals g
     where g.step_id = p_step_id order by g.decision is null desc, g.id desc limit 1;
    v_key := coalesce(v_key, 'approval');
  end if;
  insert into pgflight.approvals (step_id, gate_key) values (p_step_id, v_key)
  on conflict on constraint gate_key_is_unique_per_step do nothing;
  select g.* into v_gate from pgflight.approvals g where g.step_id = p_step_id and g.gate_key = v_key for update;
  if v_key like 'tool:%' and p_payload is not null
     and not (jsonb_typeof(p_payload) = 'object'
              and ((p_payload ? 'arguments' and jsonb_typeof(p_payload -> 'arguments') = 'object'
                    and p_decision = 'approve')
                   or (p_payload ? 'message' and jsonb_typeof(p_payload -> 'message') = 'string'))
              and (select count(*) from jsonb_object_keys(p_payload)) = 1) then
    raise exception using errcode = '22023',
      message = format('approve refused: the payload of tool gate %L must be {"arguments": {...}} or {"message": "..."}', v_key),
      detail = format('got a JSON %s%s', jsonb_typeof(p_payload),
                      case when jsonb_typeof(p_payload) = 'object'
                           then format(' with keys %s', (select string_agg(left(k, 40), ', ') from jsonb_object_keys(p_payload) k))
                           else '' end),
      hint = 'Approve with {"arguments": {...}} to run the tool with edited arguments, or with {"message": "..."} '
             'to answer the model instead of running it (approve or reject); a rejection takes no arguments.';
  end if;
  if v_gate.decision is not null then
    if v_gate.decision = p_decision then
      return query select p_step_id, v_key, v_gate.decision, false;
      return;
    end if;
    raise exception using errcode = 'ZF008', message = format('gate %L of step %s is already decided', v_key, p_step_id),
      detail = format('decided %s by %s at %s', v_gate.decision, v_gate.actor, v_gate.decided_at),
      hint = 'The first decision wins; it cannot be changed.';
  end if;
  update pgflight.approvals g set payload = p_payload where g.id = v_gate.id;
  perform pgflight._decide(v_gate.id, p_decision, session_user::text, pgflight._actor_note(p_note, p_actor), 'approval_decided');
  return query select p_step_id, v_key, p_decision, true;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.begin_agent_run(p_attempt_id bigint, p_token bigint, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(agent_run_id bigint, created boolean, iterations integer, tool_calls integer, usd numeric, max_iterations integer, max_tool_calls integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_att record;
  v_run record;
  v_agent pgflight.agent_runs;
  v_ids bigint[] := '{}';
  v_id bigint;
  v_model text;
  v_system text;
  v_max_usd double precision;
  v_max_wall double precision;
begin
  -- every option checked against its spec first (docs/options.md): 22023 naming the key
  p_options := pgflight._check_options('begin_agent_run', p_options);
  select a.step_id, a.run_id into v_att from pgflight.step_attempts a
   where a.id = p_attempt_id and a.fencing_token = p_token and a.status in ('claimed', 'running')
     -- only the login whose worker holds the attempt (else ZF012 from _reject_write)
     and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
     for share of a;
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, 'begin_agent_run');
  end if;
  select r.* into v_agent from pgflight.agent_runs r where r.step_id = v_att.step_id for update;
  if found then
    if v_agent.reserved_attempt_id is distinct from p_attempt_id then
      perform pgflight._release_reservation(v_agent.id);
    end if;
    return query select v_agent.id, false, v_agent.iterations, v_agent.tool_calls, v_agent.usd,
                        v_agent.max_iterations, v_agent.max_tool_calls;
    return;
  end if;

  v_model := pgflight._opt_text(p_options, 'model', null);
  if v_model is null or btrim(v_model) = '' then
    raise exception using errcode = '22023', message = 'option model is required',
      hint = 'e.g. {"model": "claude-sonnet-4-5", "system": "...", "task": "..."}';
  end if;
  v_system := pgflight._opt_text(p_options, 'system', '');
  v_max_usd := pgflight._opt_num(p_options, 'max_usd', null);
  v_max_wall := pgflight._opt_num(p_options, 'max_wall_s', null);
  if v_max_wall is not null then
    perform pgflight._require_positive('max_wall_s', v_max_wall);
  end if;
  if v_max_usd < 0 then
    raise exception using errcode = '22023', message = 'max_usd must not be negative';
  end if;
  select r.id, r.workspace_id, r.max_usd, r.max_wall_s, r.max_iterations, r.max_tool_calls, r.created_at
    into v_run from pgflight.runs r where r.id = v_att.run_id;

  -- the tree budgets: the nearest ancestor agent already holds the run's and its ancestors'
  select ar.budget_ids into v_ids from (
    with recursive up as (
      select s.parent_id as id, 1 as d from pgflight.steps s where s.id = v_att.step_id
      union all
      select s.parent_id, up.d + 1 from pgflight.steps s join up on s.id = up.id where s.parent_id is not null
    ) select up.id, up.d from up) u
    join pgflight.agent_runs ar on ar.step_id = u.id
   order by u.d limit 1;
  if not found then
    v_ids := '{}';
    if v_run.max_usd is not null or v_run.max_wall_s is not null then
      insert into pgflight.budgets (scope, workspace_id, run_id, limit_usd, max_wall_s, started_at)
      values ('run', v_run.workspace_id, v_run.id, v_run.max_usd, v_run.max_wall_s, v_run.created_at)
      on conflict (run_id) where scope = 'run' do nothing;
      select b.id into v_id from pgflight.budgets b where b.scope = 'run' and b.run_id = v_run.id;
      v_ids := array[v_id];
    end if;
  end if;
  if v_max_usd is not null or v_max_wall is not null then
    insert into pgflight.budgets (scope, workspace_id, run_id, step_id, limit_usd, max_wall_s, started_at)
    values ('step', v_run.workspace_id, v_run.id, v_att.step_id, v_max_usd::numeric, v_max_wall, v_now)
    on conflict (step_id) where scope = 'step' do nothing;
    select b.id into v_id from pgflight.budgets b where b.scope = 'step' and b.step_id = v_att.step_id;
    v_ids := v_ids || v_id;
  end if;

  insert into pgflight.agent_runs (step_id, run_id, workspace_id, model, system_prompt, system_prompt_hash,
                                   max_iterations, max_tool_calls, budget_ids, options, created_at, updated_at)
  values (v_att.step_id, v_run.id, v_run.workspace_id, v_model, v_system,
          encode(sha256(convert_to(v_system, 'UTF8')), 'hex'),
          pgflight._opt_num(p_options, 'max_iterations', coalesce(v_run.max_iterations, 25))::integer,
          pgflight._opt_num(p_options, 'max_tool_calls', coalesce(v_run.max_tool_calls, 50))::integer,
          array(select distinct u from unnest(v_ids) u order by u),
          coalesce(p_options, '{}'), v_now, v_now)
  returning * into v_agent;
  insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, content, status, tokens, attempt_id, created_at, updated_at)
  values (v_agent.id, 0, 0, 'user', 'text',
          jsonb_build_object('type', 'text', 'text', pgflight._opt_text(p_options, 'task', '')),
          'completed', ceil(length(pgflight._opt_text(p_options, 'task', '')) / 4.0)::integer, p_attempt_id, v_now, v_now);
  return query select v_agent.id, true, 0, 0, 0::numeric, v_agent.max_iterations, v_agent.max_tool_calls;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.cancel_run(p_run_id bigint, p_actor text DEFAULT NULL::text, p_reason text DEFAULT NULL::text) RETURNS TABLE(run_id bigint, was_running boolean, cancelled integer, cancel_requested integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_status text;
  v_c integer;
  v_r integer;
begin
  perform pgflight._require_lane_on_run('operator', p_run_id, 'cancel_run');  -- tenants
  select r.status into v_status from pgflight.runs r where r.id = p_run_id;
  if not found then
    raise exception using errcode = 'ZF003', message = format('unknown run %s', p_run_id);
  end if;
  if v_status <> 'running' then
    return query select p_run_id, false, 0, 0;
    return;
  end if;
  -- Attempts first, then the run row: the order a completing root takes (its attempt, then the
  -- run), so a cancel racing a completion cannot deadlock with it.
  select t.cancelled, t.cancel_requested into v_c, v_r
    from pgflight._cancel_tree(p_run_id, null, session_user::text, pgflight._actor_note(p_reason, p_actor)) t;
  update pgflight.runs set status = 'cancelled', finished_at = pgflight._now()
   where id = p_run_id and status = 'running';
  if not found then
    -- the run ended (its root completed) before we got here: the cancel is a no-op
    return query select p_run_id, false, v_c, v_r;
    return;
  end if;
  perform pgflight._event(p_run_id, null, null, 'running', 'cancelled', null, 'run_cancelled',
                          session_user::text,
                          jsonb_build_object('note', pgflight._actor_note(p_reason, p_actor), 'cancelled', v_c, 'cancel_requested', v_r));
  return query select p_run_id, true, v_c, v_r;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.cancel_step(p_step_id bigint, p_actor text DEFAULT NULL::text, p_reason text DEFAULT NULL::text) RETURNS TABLE(step_id bigint, cancelled integer, cancel_requested integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_step record;
  v_c integer;
  v_r integer;
  v_root_status text;
begin
  perform pgflight._require_lane_on_step('operator', p_step_id, 'cancel_step');  -- tenants
  select s.id, s.run_id, s.parent_id into v_step from pgflight.steps s where s.id = p_step_id;
  if not found then
    raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
  end if;
  if v_step.parent_id is null then
    return query select p_step_id, c.cancelled, c.cancel_requested
      from pgflight.cancel_run(v_step.run_id, p_actor, p_reason) c;
    return;
  end if;
  -- Lock order (docs/locking.md): every live attempt this cancel and its end may touch (the
  -- subtree of a fail-fast ancestor still waiting for its children, else this subtree) is locked
  -- before any steps row, deepest first then id; a sibling's completion under way is waited for
  -- here, not after the parent's row (which that completion takes next).
  perform pgflight._lock_subtree(coalesce(pgflight._cascade_root(p_step_id), p_step_id), false);
  select a.status into v_root_status from pgflight.step_attempts a
   where a.step_id = p_step_id
     and a.status in ('queued', 'claimed', 'running', 'awaiting_children', 'awaiting_approval');
  select t.cancelled, t.cancel_requested into v_c, v_r
    from pgflight._cancel_tree(v_step.run_id, p_step_id, session_user::text, pgflight._actor_note(p_reason, p_actor)) t;
  -- the subtree root ended now (it was queued or parked, not leased): tell its parent
  if v_root_status in ('queued', 'awaiting_children', 'awaiting_approval') then
    perform pgflight._step_finished(p_step_id, 'cancelled', session_user::text);
  end if;
  return query select p_step_id, v_c, v_r;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.claim_batch(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[] DEFAULT NULL::text[], p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint, step_key text, attempt_no integer, recipe text, input jsonb, lease_expires_at timestamp with time zone, deadline_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_sort TO 'off'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $_$
declare
  v_now timestamptz := pgflight._now();
  v_reclaim integer;
  v_start boolean;
  v_settings record;
  v_ws bigint[];
  v_lane_ws bigint;
  v_lane_recipe text;
  v_lanes integer;
  v_limited boolean;
  v_ids bigint[];
  v_keyed boolean;
  v_last text;
  v_epoch double precision;
begin
  -- The options validator and the argument helpers each cost a function call with its
  -- own settings (a GUC save and restore): the start option alone, and arguments inside every
  -- bound, are read here directly; anything else goes through the helpers, which raise the error.
  if p_options = '{}' then
    v_start := false;
  elsif p_options - 'start' = '{}' and jsonb_typeof(p_options -> 'start') = 'boolean' then
    v_start := (p_options ->> 'start')::boolean;
  else
    v_start := coalesce((pgflight._check_options('claim_batch', p_options) ->> 'start')::boolean, false);
  end if;
  -- the settings and the worker's last sighting, in one read; last_seen_at null: no live
  -- worker of that id registered by this login. The worker row is locked FOR SHARE: a concurrent
  -- deregister_worker (an update of the row) is waited for and its stopped_at then read, so a claim
  -- never leases steps to a worker stopped before the claim commits (a read without the lock did,
  -- in v0.8.0); a deregister that comes after waits for the claim's commit instead.
  select s.max_batch_size, s.max_lease_s, s.reclaim_in_claim, s.max_in_flight, w.last_seen_at
    into v_settings
    from pgflight.settings s
    left join lateral (
      select w.last_seen_at from pgflight.workers w
       where w.id = p_worker_id and w.stopped_at is null and w.login = session_user
         for share of w) w on true;
  -- 604800 = _limit('lease_s'); NaN, null and infinity fail these comparisons and take the slow path
  if not coalesce(p_batch_size between 1 and least(v_settings.max_batch_size, 100000)
                  and p_lease_s >= 0.001 and p_lease_s <= least(v_settings.max_lease_s, 604800)
                  and p_lease_s <> 'NaN'::double precision, false) then
    perform pgflight._require_positive('batch_size', p_batch_size);
    perform pgflight._require_positive('lease_s', p_lease_s);
    -- Caps on the batch and the lease (claim_batch(2^31-1, 1e9) took every ready step
    -- until 2058).
    perform pgflight._require_cap('max_batch_size', v_settings.max_batch_size, p_batch_size, 'batch_size');
    perform pgflight._require_cap('max_lease_s', v_settings.max_lease_s, p_lease_s, 'lease_s (seconds)');
    -- the hard bounds whatever the caps say (NaN, a lease past _limit('lease_s')): 22023
    perform pgflight._check_arg('batch_size', p_batch_size, 1, 100000);
    perform pgflight._check_arg('lease_s', p_lease_s, 0.001, pgflight._limit('lease_s'));
  end if;
  -- the workspaces this login may work in: null (every workspace: the single-tenant case) leaves
  -- the claim query as it was; otherwise each candidate row costs one probe of runs by primary key.
  v_ws := pgflight._lane_workspaces('worker');
  -- the worker must be live and registered by this login; another login's id is unknown here
  if v_settings.last_seen_at is null then
    raise exception using errcode = 'ZF010', message = format('unknown or stopped worker %s', p_worker_id),
      detail = format('no live worker %s registered by login %s', p_worker_id, session_user),
      hint = 'Call register_worker first and use the id it returns.';
  end if;
  -- its last sighting renewed at most once a second (a write of workers per claim; its
  -- readers, worker_list, metrics_snapshot and engine_health, count a worker alive for 60 s after
  -- it); a clock moved back renews it at once. Only when no other transaction holds the row (SKIP
  -- LOCKED): two claims of one worker id that both hold the share lock above and both went on to
  -- update it would each wait for the other's share lock, a deadlock PostgreSQL breaks by failing
  -- one claim (40P01). A skipped renewal is another claim's or a heartbeat's to make (the heartbeat
  -- writes it on every call).
  if v_settings.last_seen_at <= v_now - interval '1 second' or v_settings.last_seen_at > v_now then
    perform from pgflight.workers w where w.id = p_worker_id for no key update skip locked;
    if found then
      update pgflight.workers set last_seen_at = v_now where id = p_worker_id;
    end if;
  end if;
  -- the reclaim before the claim, at most once a second per session: its pick reads
  -- every live lease (lease_expires_at has no index, so that a heartbeat stays HOT), which cost
  -- 0.08-0.1 ms of every claim with 16 steps in flight and grows with the leases in flight; the
  -- sweeps reclaim the rest. The session's last one is pgflight.claim_reclaim_at (epoch seconds of
  -- the engine clock; anything else in it, or a clock moved back, counts as never). A reclaim that
  -- took its whole limit is not recorded: more lapsed leases may be left (a worker's crash), and
  -- the next claim goes on draining them, as every claim did before (C06, C44)
  v_reclaim := v_settings.reclaim_in_claim;
  if v_reclaim > 0 then
    v_last := current_setting('pgflight.claim_reclaim_at', true);
    v_epoch := extract(epoch from v_now);
    if v_last is null or v_last !~ '^[0-9]{1,12}(\.[0-9]{1,9})?$'
       or v_epoch < v_last::double precision or v_epoch >= v_last::double precision + 1 then
      if pgflight._reclaim(v_now, v_reclaim) < v_reclaim then
        -- (numeric text, exact: a double's text follows the session's extra_float_digits)
        perform pg_catalog.set_config('pgflight.claim_reclaim_at', extract(epoch from v_now)::text, false);
      end if;
    end if;
  end if;

  -- the fast path (see the head of this file). One statement finds the ready lanes,
  -- stopping at the second (a skip-scan probe of a ready index per recipe named, one more for a
  -- second workspace of the first lane), and whether anything else is in play for them (a recipe
  -- limit; a cap, rate limit or pause of the lane's workspace). It was one statement per recipe
  -- named plus four: 20,024 probes per 20,000 jobs with the demo worker's 8 recipes.
  if v_settings.max_in_flight is null then
    select g.lanes, g.ws, g.recipe,
           exists (select from pgflight.recipe_limits)
           or exists (select from pgflight.workspace_limits l
                       where l.workspace_id = g.ws
                         and (l.paused_at is not null or l.max_in_flight is not null or l.starts_per_s is not null))
      into v_lanes, v_lane_ws, v_lane_recipe, v_limited
      from (select count(*)::integer + coalesce(bool_or(l.more), false)::integer as lanes,
                   min(l.ws) as ws, min(l.recipe) as recipe
              from (-- p_recipes null: the first workspace with queued work, and whether there is another
                    select null::text as recipe, f.ws,
                           (select a.workspace_id from pgflight.step_attempts a
                             where a.status = 'queued' and a.available_after < 'infinity'
                               and a.workspace_id > f.ws
                             order by a.workspace_id limit 1) is not null as more
                      from (select a.workspace_id as ws from pgflight.step_attempts a
                             where a.status = 'queued' and a.available_after < 'infinity'
                             order by a.workspace_id limit 1) f
                     where p_recipes is null
                    union all
                    -- each recipe named: its first workspace with queued work, and whether there is another.
                    -- (The recipe as a range, not an equality: ordered by recipe and workspace, only the
                    -- recipe's ready index serves these reads, whatever the statistics. With an equality
                    -- the order is by workspace alone, and a plan made while one recipe filled the queue
                    -- walked the workspace ready index for each recipe named with nothing queued.)
                    select r.recipe, f.ws,
                           (select a.workspace_id from pgflight.step_attempts a
                             where (a.recipe, a.workspace_id) > (r.recipe, f.ws) and a.recipe <= r.recipe
                               and a.status = 'queued' and a.available_after < 'infinity'
                             order by a.recipe, a.workspace_id limit 1) is not null as more
                      from (select distinct u.recipe from unnest(p_recipes) as u(recipe)
                             where u.recipe is not null) r
                      cross join lateral (
                        select a.workspace_id as ws from pgflight.step_attempts a
                         where a.recipe >= r.recipe and a.recipe <= r.recipe
                           and a.status = 'queued' and a.available_after < 'infinity'
                         order by a.recipe, a.workspace_id limit 1) f
                     limit 2) l) g;
    if v_limited then
      v_lanes := -1;  -- the fair claim decides
    elsif v_lanes = 0 then
      return;  -- nothing queued that this call may claim
    end if;
    if v_lanes = 1 and (v_ws is null or v_lane_ws = any (v_ws)) then
      -- the lane's candidates in claim order, as _claim_set reads them (two statements, one per kind
      -- of lane, so that each reads its own ready index)
      if v_lane_recipe is null then
        select coalesce(array_agg(x.id), '{}'), coalesce(bool_or(x.concurrency_key is not null), false)
          into v_ids, v_keyed
          from (select a.id, a.concurrency_key from pgflight.step_attempts a
                 where a.workspace_id = v_lane_ws and a.status = 'queued'
                   and a.available_after <= v_now and a.available_after < 'infinity'
                 order by a.priority desc, a.available_after, a.id
                 limit p_batch_size
                   for update skip locked) x;
      else
        select coalesce(array_agg(x.id), '{}'), coalesce(bool_or(x.concurrency_key is not null), false)
          into v_ids, v_keyed
          from (select a.id, a.concurrency_key from pgflight.step_attempts a
                 where a.recipe = v_lane_recipe and a.workspace_id = v_lane_ws and a.status = 'queued'
                   and a.available_after <= v_now and a.available_after < 'infinity'
                 order by a.priority desc, a.available_after, a.id
                 limit p_batch_size
                   for update skip locked) x;
      end if;
      if v_ids = '{}' then
        return;  -- every candidate is held by another claimer
      elsif not v_keyed then
        -- leased at the clock's reading now, after the locks (as _claim_set does); no caps: slots 0
        return query
          select * from pgflight._lease_attempts(p_worker_id, v_ids, p_lease_s, v_start, pgflight._now(), 0::smallint);
        return;
      end if;
    end if;
  end if;

  -- the fair claim across workspaces, with caps, keys, rate limits and pause (internals/_fair_claim),
  -- over the workspaces of the login's worker lane (v_ws; null: every workspace)
  return query select * from pgflight._claim_fair(p_worker_id, p_batch_size, p_lease_s, p_recipes, v_start, v_now, v_ws);
end
$_$;

CREATE OR REPLACE FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]) RETURNS TABLE(attempt_id bigint, outcome text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_i integer := 0;
  v_max bigint;
  v_depth integer;
  v_errors jsonb[];
begin
  if coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_tokens), 0)
     or coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_results), 0) then
    raise exception using errcode = '22023', message = 'attempt ids, tokens and results differ in length',
      hint = 'Pass one token and one result per attempt id, in the same order.';
  end if;
  -- a NULL never matches a token (the fence's rule): the whole batch is refused before anything is
  -- read. One expression, no query (array_position searches one-dimensional arrays only: a deeper
  -- one is refused as such first)
  if (case when array_ndims(p_attempt_ids) > 1 or array_ndims(p_tokens) > 1 then true
           else array_position(p_attempt_ids, null) is not null or array_position(p_tokens, null) is not null end) then
    perform pgflight._refuse_fence_arrays('complete_batch', p_attempt_ids, p_tokens);
  end if;
  -- one cap on results, settings.max_result_bytes, checked row by row. The hot path: one
  -- set-based size check (the cap read in it); a refused row goes through _complete_refusing
  -- and the depth cap, settings.max_json_depth, walked only for a result long enough to exceed it
  if exists (select from unnest(p_results) as r(v), pgflight.settings s,
                     lateral (select octet_length(r.v::text) as n) l
              where l.n > s.max_result_bytes
                 or (l.n > 2 * s.max_json_depth + 1 and pgflight._json_too_deep(r.v, s.max_json_depth))) then
    select s.max_result_bytes, s.max_json_depth into v_max, v_depth from pgflight.settings s;
    select array_agg(case when octet_length(r.v::text) > v_max
                          then jsonb_build_object('message', format('result too large: %s bytes; the cap is %s bytes (settings.max_result_bytes)',
                                                                    octet_length(r.v::text), v_max),
                                                  'sqlstate', 'ZF005')
                          when pgflight._json_too_deep(r.v, v_depth)
                          then jsonb_build_object('message', format('result nests %s levels deep; the cap is %s (settings.max_json_depth)',
                                                                    coalesce(pgflight._json_depth(r.v)::text, 'more than ' || v_depth), v_depth),
                                                  'sqlstate', 'ZF005')
                     end order by r.ord)
      into v_errors
      from unnest(p_results) with ordinality as r(v, ord);
    return query select * from pgflight._complete_refusing(p_attempt_ids, p_tokens, p_results, v_errors);
    return;
  end if;
  -- outcomes come back in the order given, so the i-th row goes with the i-th token
  for attempt_id, outcome in
    select c.attempt_id, c.outcome from pgflight._complete_many(p_attempt_ids, p_tokens, p_results, pgflight._now()) c
  loop
    v_i := v_i + 1;
    if outcome <> 'succeeded' then
      -- logged only for an attempt of this login's own workers (_record_stale checks it)
      perform pgflight._record_stale(attempt_id, p_tokens[v_i], 'complete');
    end if;
    return next;
  end loop;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb DEFAULT NULL::jsonb) RETURNS TABLE(attempt_id bigint, status text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_attempt_id is null or p_token is null then
    perform pgflight._null_refused('complete_step', case when p_attempt_id is null then 'the attempt id'
                                                         else 'the fencing token' end);
  end if;
  -- the result is capped (ZF005, nothing written)
  perform pgflight._require_cap('max_result_bytes', (select s.max_result_bytes from pgflight.settings s),
                                octet_length(p_result::text), 'result (bytes)');
  perform pgflight._require_json_depth(p_result, 'result');
  if (select c.outcome from pgflight._complete_many(array[p_attempt_id], array[p_token], array[p_result],
                                                     pgflight._now()) c) is distinct from 'succeeded' then
    perform pgflight._reject_write(p_attempt_id, p_token, 'complete_step');
  end if;
  return query select p_attempt_id, 'succeeded'::text;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_results jsonb, p_next_iteration integer DEFAULT NULL::integer, p_est_usd numeric DEFAULT NULL::numeric) RETURNS TABLE(agent_run_id bigint, stored text[], reserved boolean, reserved_usd numeric, refusal jsonb)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_stored text[];
  v_refusal jsonb;
  v_missing text;  -- a tool_use_id with no tool_use
  v_malformed boolean;  -- an element is not a tool_result block with a tool_use_id
  v_f record;  -- the fence's row: the agent run and whether a wall-time cap of its reservation ran out
begin
  -- bounded, so the budgets' numeric(16, 8) cannot overflow; _check_arg raises (
  -- called only for a value out of range, the call cost more than the check)
  if p_est_usd is not null and not (p_est_usd >= 0 and p_est_usd <= 1000000) then
    perform pgflight._check_arg('est_usd', p_est_usd, 0, 1000000);
  end if;
  if p_next_iteration is not null and (p_next_iteration < 1 or p_est_usd is null or p_est_usd < 0) then
    raise exception using errcode = '22023', message = 'next iteration must be >= 1 and est_usd >= 0',
      detail = format('next iteration %s, est_usd %s', p_next_iteration, p_est_usd);
  end if;
  -- _agent_fence's statement (the attempt FOR SHARE, the agent run FOR UPDATE, the holder's login)
  -- and, in it, whether a wall-time cap of the budgets the run holds a reservation on ran out (read
  -- without locks: wall time only grows; used below when that reservation is kept)
  select r as run,
         exists (select from pgflight.budgets b
                  where b.id = any (r.reserved_budget_ids) and b.max_wall_s is not null
                    and v_now > b.started_at + make_interval(secs => b.max_wall_s)) as wall_ran_out
    into v_f
    from pgflight.step_attempts a
    join pgflight.agent_runs r on r.step_id = a.step_id
   -- the status test written IS TRUE, so no plan reads the attempt through the partial index of
   -- leased attempts (all of them) instead of its primary key (a choice seen on small tables)
   where a.id = p_attempt_id and a.fencing_token = p_token and (a.status in ('claimed', 'running')) is true
     and r.id = p_agent_run_id
     and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
     for share of a for update of r;
  if found then
    v_run := v_f.run;
  else  -- ZF001 / ZF002 / ZF003 / ZF012 (found on a second look, the caps are read again below)
    v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'complete_tool_calls');
  end if;
  -- _store_tool_results' statement (see there): each result joined to its tool_use, written or,
  -- in flight or interrupted, completed; the first result of a call wins. Results that are not an
  -- array go to the helper first, which raises 22023 (jsonb_array_elements would raise its own
  -- error); results with an element that is not a tool_result block with a tool_use_id, or that
  -- name an unknown call, go to it after the statement (which found them: it was a
  -- statement of its own before), and it raises 22023 or ZF003: nothing stays stored.
  if p_results is null or jsonb_typeof(p_results) <> 'array' then
    perform pgflight._store_tool_results(v_run.id, p_attempt_id, p_results, v_now);
  end if;
  perform pgflight._require_json_depth(p_results, 'tool results');
  with e as (
    select e.v, e.ord from jsonb_array_elements(p_results) with ordinality e(v, ord)
  ), r as (
    select distinct on (e.v ->> 'tool_use_id') e.v ->> 'tool_use_id' as tid, e.v as result
      from e
     order by e.v ->> 'tool_use_id', e.ord
  ), j as (
    select r.tid, r.result, u.iteration, u.seq, u.tool_name
      from r left join pgflight.traces u
        on u.agent_run_id = v_run.id and u.tool_use_id = r.tid and u.block_type = 'tool_use'
  ), up as (
    insert into pgflight.traces as t (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name,
                                      content, status, tokens, attempt_id, created_at, updated_at)
    select v_run.id, j.iteration, pgflight._seq_band_tool_results() + j.seq, 'user', 'tool_result', j.tid, j.tool_name, j.result, 'completed',
           ceil(length(j.result::text) / 4.0)::integer, p_attempt_id, v_now, v_now
      from j where j.seq is not null
    on conflict on constraint block_is_unique do update
      set content = excluded.content, status = 'completed', tokens = excluded.tokens,
          attempt_id = excluded.attempt_id, updated_at = excluded.updated_at
      where t.status <> 'completed'
    returning t.tool_use_id
  )
  select (select bool_or(jsonb_typeof(e.v) <> 'object' or e.v ->> 'type' is distinct from 'tool_result'
                         or e.v ->> 'tool_use_id' is null) from e),
         (select min(j.tid) from j where j.seq is null), (select coalesce(array_agg(up.tool_use_id), '{}') from up)
    into v_malformed, v_missing, v_stored;
  if v_malformed or v_missing is not null then  -- the helper raises 22023 / ZF003; the transaction undoes the store
    perform pgflight._store_tool_results(v_run.id, p_attempt_id, p_results, v_now);
  end if;
  if p_next_iteration is null then
    if v_run.reserved_attempt_id = p_attempt_id and v_run.reserved_iteration is not null then
      if v_run.reserved_call_out then  -- the caller says the call is not out: released, not charged
        update pgflight.agent_runs r set reserved_call_out = false where r.id = v_run.id;
      end if;
      perform pgflight._release_reservation(v_run.id);
    end if;
    agent_run_id := v_run.id;
    stored := v_stored;
    reserved := false;
    reserved_usd := 0;
    return next;
    return;
  end if;
  if v_run.reserved_attempt_id = p_attempt_id and v_run.reserved_iteration = p_next_iteration then
    -- admitted by record_model_call before the tools ran: kept (no call to _reserve, no budget
    -- move) unless a wall-time cap of its budgets ran out meanwhile (read without locks: wall time
    -- only grows); then it is given back and the call admitted anew, which refuses it
    if coalesce(v_f.wall_ran_out,
                exists (select from pgflight.budgets b
                         where b.id = any (v_run.reserved_budget_ids) and b.max_wall_s is not null
                           and v_now > b.started_at + make_interval(secs => b.max_wall_s))) then
      perform pgflight._release_reservation(v_run.id);
      v_run.reserved_usd := 0;
      v_run.reserved_attempt_id := null;
      v_run.reserved_iteration := null;
      v_run.reserved_budget_ids := null;
      v_refusal := pgflight._reserve(v_run, p_attempt_id, p_next_iteration, p_est_usd, v_now);
    elsif p_est_usd is distinct from v_run.reserved_usd then
      -- re-priced from the request about to be sent, tool results included: more is admitted
      -- against every cap of the reservation's budgets (refused: the call is not made and its
      -- reservation is released), less gives the difference back
      if p_est_usd > v_run.reserved_usd then
        v_refusal := pgflight._move_budget(v_run.reserved_budget_ids, p_est_usd - v_run.reserved_usd, 0, 0, true,
                                           v_now, format('agent_run=%s iteration=%s priced with its tool results',
                                                         v_run.id, p_next_iteration));
      else
        perform pgflight._move_budget(v_run.reserved_budget_ids, 0, 0, v_run.reserved_usd - p_est_usd, false,
                                      v_now, 'release');
      end if;
      if v_refusal is null then
        update pgflight.agent_runs r set reserved_usd = p_est_usd, reserved_call_out = true, updated_at = v_now
         where r.id = v_run.id;
      else
        perform pgflight._release_reservation(v_run.id);  -- taken ahead (not out): released
      end if;
    else  -- the admission of the call about to be made: its request leaves next
      update pgflight.agent_runs r set reserved_call_out = true where r.id = v_run.id;
    end if;
  else
    v_refusal := pgflight._reserve(v_run, p_attempt_id, p_next_iteration, p_est_usd, v_now);
  end if;
  -- the row returned without a query
  agent_run_id := v_run.id;
  stored := v_stored;
  reserved := v_refusal is null;
  reserved_usd := case when v_refusal is not null then 0 else p_est_usd end;
  refusal := v_refusal;
  return next;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.create_workspace(p_name text, p_options jsonb DEFAULT '{}'::jsonb) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_id bigint;
begin
  perform pgflight._require_lane('operator', null, 'create_workspace');  -- acts on every workspace
  if length(p_name) > 200 then
    raise exception using errcode = '22023', message = 'workspace name is longer than 200 characters',
      detail = format('got %s characters', length(p_name));
  end if;
  -- every option checked against its spec first (docs/options.md): 22023 naming the key
  p_options := pgflight._check_options('create_workspace', p_options);
  if p_name is null or btrim(p_name) = '' then
    raise exception using errcode = '22023', message = 'workspace name is required',
      hint = 'Pass a non-blank name, e.g. select pgflight.create_workspace(''default'').';
  end if;
  insert into pgflight.workspaces as w (name, daily_usd_cap, max_run_usd, options)
  values (p_name,
          pgflight._opt_num(p_options, 'daily_usd_cap', null),
          pgflight._opt_num(p_options, 'max_run_usd', null),
          coalesce(p_options, '{}'))
  on conflict (name) do update
     set daily_usd_cap = coalesce(excluded.daily_usd_cap, w.daily_usd_cap),
         max_run_usd = coalesce(excluded.max_run_usd, w.max_run_usd),
         options = w.options || excluded.options
  returning id into v_id;
  return v_id;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.enforce_budgets(p_limit integer DEFAULT 1000) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_count integer := 0;
  v_row record;
  v_reason text;
begin
  perform pgflight._require_lane('operator', null, 'enforce_budgets');  -- acts on every workspace
  perform pgflight._check_limit(p_limit);  -- 22023 for a negative limit
  for v_row in
    select r.id, r.reserved_iteration is not null as held from pgflight.agent_runs r
      join pgflight.step_attempts a on a.id = r.reserved_attempt_id
     where r.reserved_attempt_id is not null and a.status not in ('claimed', 'running')
     order by r.id
     limit p_limit
       for update of r skip locked
  loop
    begin
      perform pgflight._release_reservation(v_row.id);
      if v_row.held then
        v_count := v_count + 1;
      end if;
    exception when others then
      raise warning 'pgflight: enforce_budgets skipped the reservation of agent run %: % (SQLSTATE %)',
        v_row.id, sqlerrm, sqlstate
        using hint = 'The next pass tries it again; the rest of this pass went on.';
    end;
  end loop;

  -- the model-token windows older than any rolling minute (tables/model_token_windows)
  delete from pgflight.model_token_windows w where w.bucket < v_now - interval '120 s';

  for v_row in
    select b.id, b.scope, b.run_id, b.step_id, b.limit_usd, b.spent_usd, b.max_wall_s, b.started_at
      from pgflight.budgets b
     where b.scope <> 'workspace_day' and b.exceeded_at is null
       and ((b.limit_usd is not null and b.spent_usd > b.limit_usd)
            or (b.max_wall_s is not null and v_now > b.started_at + make_interval(secs => b.max_wall_s)))
     order by b.id
     limit greatest(p_limit - v_count, 0)
  loop
    v_reason := case when v_row.limit_usd is not null and v_row.spent_usd > v_row.limit_usd
                     then format('budget_exceeded: spent %s USD of %s', v_row.spent_usd, v_row.limit_usd)
                     else format('budget_exceeded: wall time over %s s', v_row.max_wall_s) end;
    begin
      if v_row.scope = 'run' then
        perform pgflight.cancel_run(v_row.run_id, 'enforce_budgets', v_reason);
      elsif exists (select 1 from pgflight.step_attempts a where a.step_id = v_row.step_id
                     and a.status in ('queued', 'claimed', 'running', 'awaiting_children', 'awaiting_approval')) then
        perform pgflight.cancel_step(v_row.step_id, 'enforce_budgets', v_reason);
      end if;
      update pgflight.budgets set exceeded_at = v_now where id = v_row.id and exceeded_at is null;
      if found then
        v_count := v_count + 1;
      end if;
    exception when others then
      raise warning 'pgflight: enforce_budgets skipped budget % (% over its cap): % (SQLSTATE %)',
        v_row.id, v_row.scope, sqlerrm, sqlstate
        using hint = 'The next pass tries it again; the rest of this pass went on.';
    end;
  end loop;
  return v_count;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.expire_approvals(p_limit integer DEFAULT 1000) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_row record;
  v_count integer := 0;
begin
  perform pgflight._require_lane('operator', null, 'expire_approvals');  -- acts on every workspace
  perform pgflight._check_limit(p_limit);  -- 22023 for a negative limit
  for v_row in
    select g.id, g.default_decision from pgflight.approvals g
     where g.decision is null and g.expires_at < (select pgflight._now())
     order by g.expires_at limit p_limit
       for update skip locked
  loop
    begin
      perform pgflight._decide(v_row.id, v_row.default_decision, 'expire_approvals', 'expired', 'approval_expired');
      v_count := v_count + 1;
    exception when others then
      raise warning 'pgflight: expire_approvals skipped gate %: % (SQLSTATE %)', v_row.id, sqlerrm, sqlstate
        using hint = 'The next pass tries it again; the other gates of this pass were decided.';
    end;
  end loop;
  return v_count;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(attempt_id bigint, outcome text, next_attempt_id bigint, available_after timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_status text;
  v_opts jsonb := pgflight._check_options('fail_step', p_options);
  v_retryable boolean := coalesce((v_opts ->> 'retryable')::boolean, true);
  v_after double precision := (v_opts ->> 'retry_after_s')::double precision;
begin
  -- Lock order (docs/locking.md): when this failure ends the step, what its end may cancel (the
  -- subtree of a fail-fast ancestor still waiting for its children, or its own children) is locked
  -- now, with this attempt, deepest first then id, before any steps row: never after the parent's
  -- row. _lock_subtree also locks attempts committed while it waited (a sibling's retry), and waits
  -- for one another transaction holds with nothing locked. A step with neither locks nothing here.
  if exists (select from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id
              where a.id = p_attempt_id and a.fencing_token = p_token and a.status in ('claimed', 'running')
                and (not v_retryable or s.failed_attempts + 1 >= s.max_attempts)) then
    perform pgflight._lock_cascade(p_attempt_id, false);
  end if;
  -- the error is capped (ZF005, nothing written)
  perform pgflight._require_cap('max_error_bytes', (select s.max_error_bytes from pgflight.settings s),
                                octet_length(p_error::text), 'error (bytes)');
  perform pgflight._require_json_depth(p_error, 'error');
  v_status := (pgflight._lock_held(p_attempt_id, p_token, 'fail_step')).status;
  return query
    select p_attempt_id, f.outcome, f.next_attempt_id, f.available_after
      from pgflight._fail_attempt(p_attempt_id, v_status, 'failed',
                                  coalesce(p_error, '{"message": "failed"}'), v_retryable, v_after,
                                  'failed') f;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.heartbeat(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[]) RETURNS TABLE(attempt_id bigint, status text, lease_expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_ok bigint[];
  v_ok_tokens bigint[];
  v_until timestamptz[];
begin
  if coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_tokens), 0) then
    raise exception using errcode = '22023', message = 'attempt ids and tokens differ in length',
      detail = format('%s attempt ids, %s tokens', cardinality(p_attempt_ids), cardinality(p_tokens)),
      hint = 'Pass one fencing token per attempt id, in the same order.';
  end if;
  -- a NULL never matches a token (the fence's rule): refused before anything is read. One
  -- expression, no query (array_position searches one-dimensional arrays only: a deeper one is
  -- refused as such first)
  if p_worker_id is null then
    perform pgflight._null_refused('heartbeat', 'the worker id');
  end if;
  if (case when array_ndims(p_attempt_ids) > 1 or array_ndims(p_tokens) > 1 then true
           else array_position(p_attempt_ids, null) is not null or array_position(p_tokens, null) is not null end) then
    perform pgflight._refuse_fence_arrays('heartbeat', p_attempt_ids, p_tokens);
  end if;
  -- the worker must be live and registered by this login; another login's id is unknown here
  update pgflight.workers set last_seen_at = v_now
   where id = p_worker_id and stopped_at is null and login = session_user;
  if not found then
    raise exception using errcode = 'ZF010', message = format('unknown or stopped worker %s', p_worker_id),
      detail = format('no live worker %s registered by login %s', p_worker_id, session_user),
      hint = 'Call register_worker first and use the id it returns.';
  end if;

  -- Renew what this worker still owns with this token.
  with asked as (
    select t.attempt_id, t.token from unnest(p_attempt_ids, p_tokens) as t(attempt_id, token)
  ), renewed as (
    update pgflight.step_attempts a
       set lease_expires_at = v_now + make_interval(secs => a.lease_s)
      from asked q
     where a.id = q.attempt_id and a.fencing_token = q.token and a.worker_id = p_worker_id
       and a.status in ('claimed', 'running')
    returning a.id, a.fencing_token, a.lease_expires_at
  )
  select array_agg(r.id), array_agg(r.fencing_token), array_agg(r.lease_expires_at)
    into v_ok, v_ok_tokens, v_until from renewed r;

  -- The others are read in a statement of its own, so an attempt whose cancel committed while
  -- this heartbeat waited for its row lock reads as cancelled, not lost.
  return query
  select q.attempt_id,
         case when n.i is not null then 'held'
              when a.status = 'cancel_requested' and a.fencing_token = q.token and a.worker_id = p_worker_id
                then 'cancelled'
              else 'lease_lost' end,
         v_until[n.i]
    from unnest(p_attempt_ids, p_tokens) as q(attempt_id, token)
    left join lateral (select i from generate_subscripts(v_ok, 1) as i
                        where v_ok[i] = q.attempt_id and v_ok_tokens[i] = q.token) n on true
    left join pgflight.step_attempts a on a.id = q.attempt_id;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.install_schedules(p_interval_s integer DEFAULT 5) RETURNS TABLE(job_name text, schedule text, command text)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v_old bigint;
  v_version text;
  v_parts text[];
  v_seconds boolean;
begin
  select e.extversion into v_version from pg_catalog.pg_extension e where e.extname = 'pg_cron';
  if v_version is null then
    raise exception using errcode = 'ZF011', message = 'pg_cron is not installed in this database',
      detail = format('database %s; cron.database_name is %s', current_database(),
                      coalesce(current_setting('cron.database_name', true), 'unset')),
      hint = 'Add pg_cron to shared_preload_libraries, set cron.database_name to this database and CREATE EXTENSION pg_cron; or call pgflight.run_sweeps() from another scheduler.';
  end if;
  perform pgflight._require_positive('interval_s', p_interval_s);
  v_parts := regexp_match(v_version, '^(\d+)\.(\d+)');
  v_seconds := (v_parts[1]::integer, v_parts[2]::integer) >= (1, 5) and p_interval_s < 60;

  -- Every job runs as pgflight_cron (not a superuser, not a member of the owner), in this
  -- database, scheduled with cron.schedule_in_database (pg_cron 1.4 and later; scheduling for
  -- another role needs a superuser, which is who installs). Jobs of an earlier install that ran
  -- as another role are removed first. pgflight_cron needs USAGE on schema cron to purge its own
  -- job history (pg_cron's row-level policy limits it to its own rows).
  for v_old in select j.jobid from cron.job j
                where j.jobname like 'pgflight-%' and j.database = current_database()
                  and j.username <> 'pgflight_cron' loop
    perform cron.unschedule(v_old);
  end loop;
  grant usage on schema cron to pgflight_cron;

  job_name := 'pgflight-sweeps';
  if v_seconds then
    schedule := format('%s seconds', p_interval_s);
    command := format('call pgflight.sweep_loop(%s, %s)', p_interval_s, p_interval_s);
  else
    schedule := '* * * * *';
    command := format('call pgflight.sweep_loop(60, %s)', p_interval_s);
  end if;
  perform cron.schedule_in_database(job_name, schedule, command, current_database(), 'pgflight_cron');
  return next;

  for v_old in select j.jobid from cron.job j
                where j.jobname = 'pgflight-purge' and j.database = current_database() loop
    perform cron.unschedule(v_old);
  end loop;

  job_name := 'pgflight-cron-history';
  schedule := '23 * * * *';
  command := $c$delete from cron.job_run_details where end_time < pg_catalog.now() - interval '1 day'$c$;
  perform cron.schedule_in_database(job_name, schedule, command, current_database(), 'pgflight_cron');
  return next;
end
$_$;

CREATE OR REPLACE FUNCTION pgflight.metrics_snapshot(p_events_after bigint DEFAULT 0, p_max_events integer DEFAULT 100000) RETURNS TABLE(metric text, labels jsonb, value double precision)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_day timestamptz := date_trunc('day', v_now at time zone 'UTC') at time zone 'UTC';
  v_after bigint := coalesce(p_events_after, 0);
  v_last bigint;
  v_lanes bigint[] := pgflight._lane_workspaces('reader');  -- null: every workspace
begin
  perform pgflight._require_limit('max_events', p_max_events, 10000000);
  return query
  select m.metric, jsonb_build_object('workspace', q.workspace, 'recipe', q.recipe), m.value
    from pgflight.queue_depths() q,
         lateral (values ('queue_ready', q.ready::double precision), ('queue_delayed', q.delayed::double precision),
                         ('in_flight', q.in_flight::double precision), ('parked', q.parked::double precision),
                         ('oldest_ready_age_seconds', q.oldest_ready_s)) m(metric, value);

  return query
  select 'claims_total', '{}'::jsonb,
         (select case when s.is_called then s.last_value else 0 end from pgflight.fencing_tokens s)::double precision
   where v_lanes is null;

  return query
  select 'dead_letters', '{}'::jsonb, count(*)::double precision
    from pgflight.step_attempts a
    join pgflight.steps s on s.id = a.step_id and s.last_attempt_no = a.attempt_no
   where a.status = 'dead_letter'
     and (v_lanes is null or exists (select from pgflight.runs r
                                      where r.id = a.run_id and r.workspace_id = any(v_lanes)));

  return query
  select x.metric, '{}'::jsonb, x.value
    from (select count(*)::double precision as n,
                 coalesce(extract(epoch from v_now - min(a.lease_expires_at)), 0)::double precision as lag
            from pgflight.step_attempts a
           where a.status in ('claimed', 'running', 'cancel_requested') and a.lease_expires_at < v_now
             and (v_lanes is null or exists (select from pgflight.runs r
                                              where r.id = a.run_id and r.workspace_id = any(v_lanes)))) e,
         lateral (values ('expired_leases', e.n), ('sweep_lag_seconds', e.lag)) x(metric, value);

  if v_lanes is null then  -- engine-wide: for a login reading every workspace only
    return query
    select 'workers_alive', '{}'::jsonb, count(*)::double precision
      from pgflight.workers w
     where w.stopped_at is null and w.last_seen_at > v_now - interval '60 seconds';
  end if;

  return query
  select m.metric, jsonb_build_object('workspace', w.name, 'model', c.model), m.value
    from (select c.workspace_id, c.model, count(*) as calls, sum(c.input_tokens) as input_tokens,
                 sum(c.output_tokens) as output_tokens, sum(c.usd) as usd
            from pgflight.costs c
           where c.at >= v_day and (v_lanes is null or c.workspace_id = any(v_lanes))
           group by 1, 2) c
    join pgflight.workspaces w on w.id = c.workspace_id,
         lateral (values ('model_calls_today', c.calls::double precision),
                         ('input_tokens_today', c.input_tokens::double precision),
                         ('output_tokens_today', c.output_tokens::double precision),
                         ('usd_today', c.usd::double precision)) m(metric, value);

  -- waits (docs/waiting.md): steps parked on a pending timer or event wait, and the age of the
  -- oldest, by workspace and kind (the pending-wait indexes: every pending wait has a due time or
  -- is an event wait)
  return query
  select x.metric, jsonb_build_object('workspace', ws.name, 'kind', g.kind), x.value
    from (select w.workspace_id, w.kind, count(*) as n, extract(epoch from v_now - min(w.requested_at)) as oldest
            from pgflight.waits w
           where w.outcome is null and w.parked_attempt_id is not null
             and (v_lanes is null or w.workspace_id = any(v_lanes))
           group by 1, 2) g
    join pgflight.workspaces ws on ws.id = g.workspace_id,
         lateral (values ('waits_parked', g.n::double precision),
                         ('waits_oldest_age_seconds', greatest(g.oldest, 0)::double precision)) x(metric, value);

  return query
  select 'notification_queue_usage', '{}'::jsonb, pg_notification_queue_usage();

  return query
  select 'oldest_xmin_age', '{"source": "transactions"}'::jsonb,
         age(pg_snapshot_xmin(pg_current_snapshot())::text::xid)::double precision
  union all
  select 'oldest_xmin_age', '{"source": "replication_slots"}'::jsonb,
         coalesce(max(greatest(age(sl.xmin), age(sl.catalog_xmin))), 0)::double precision
    from pg_replication_slots sl;

  -- the id window of this call: from the cursor (or the oldest event left, after a purge) for at
  -- most p_max_events ids, never past the newest event; every end read from an index. The events
  -- ids are the events rows' and those the attempts took for the transitions run_events derives
  -- (a started claim, a success from running).
  v_after := greatest(v_after, coalesce(least((select min(e.id) from pgflight.events e),
                                              (select min(a.claim_event_id) from pgflight.step_attempts a),
                                              (select min(a.finish_event_id) from pgflight.step_attempts a)) - 1,
                                        v_after));
  -- (a cursor within p_max_events of the largest bigint ends the window there: the sum overflowed)
  v_last := least(case when v_after > 9223372036854775807 - p_max_events then 9223372036854775807
                       else v_after + p_max_events end,
                  coalesce(greatest((select max(e.id) from pgflight.events e),
                                    (select max(a.claim_event_id) from pgflight.step_attempts a),
                                    (select max(a.finish_event_id) from pgflight.step_attempts a)),
                           v_after));
  return query
  select k.metric, k.labels, k.value
    from (
      -- one pass over the window, through the primary key and the two event-id indexes
      select count(*) filter (where e.to_status = 'succeeded') as completions,
             count(*) filter (where e.to_status in ('failed', 'lease_expired', 'timed_out', 'dead_letter')) as failures,
             count(*) filter (where e.reason = 'lease_expired') as reclaims,
             count(*) filter (where e.to_status = 'dead_letter') as dead_lettered,
             count(*) filter (where e.reason = 'stale_result_rejected') as stale_writes_refused,
             count(*) filter (where e.reason = 'claimed') as claims
        from (select e.run_id, e.to_status, e.reason from pgflight.events e
               where e.id > v_after and e.id <= v_last
              union all
              select a.run_id, 'running', 'claimed' from pgflight.step_attempts a
               where a.claim_event_id > v_after and a.claim_event_id <= v_last
              union all
              select a.run_id, 'succeeded', 'succeeded' from pgflight.step_attempts a
               where a.finish_event_id > v_after and a.finish_event_id <= v_last) e
       where (v_lanes is null or exists (select from pgflight.runs r
                                          where r.id = e.run_id and r.workspace_id = any(v_lanes)))) w,
         lateral (values
           ('events_delta', '{"kind": "completions"}'::jsonb, w.completions::double precision),
           ('events_delta', '{"kind": "failures"}', w.failures),
           ('events_delta', '{"kind": "reclaims"}', w.reclaims),
           ('events_delta', '{"kind": "dead_lettered"}', w.dead_lettered),
           ('events_delta', '{"kind": "stale_writes_refused"}', w.stale_writes_refused),
           ('events_delta', '{"kind": "claims"}', w.claims),
           ('events_cursor', '{}', greatest(v_last, v_after)::double precision)) k(metric, labels, value);
end
$$;

CREATE OR REPLACE FUNCTION pgflight.purge_finished(p_older_than_s double precision DEFAULT NULL::double precision, p_limit integer DEFAULT 1000) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ids bigint[];
  v_steps bigint[];
  v_age double precision;
  v_role text;              -- session_replication_role to restore (null: not switched)
begin
  perform pgflight._require_lane('operator', null, 'purge_finished');  -- acts on every workspace
  perform pgflight._check_limit(p_limit);  -- 22023 for a negative limit
  if p_older_than_s is not null then
    perform pgflight._check_arg('older_than_s', p_older_than_s, 0, 3153600000);
  end if;
  v_age := coalesce(p_older_than_s, (select s.purge_after_s from pgflight.settings s));
  select array_agg(r.id) into v_ids from (
    -- a run finishes after it is created, so created_at bounds the scan (runs_created_idx)
    select r.id from pgflight.runs r
     where r.created_at < (select pgflight._now()) - make_interval(secs => v_age)
       and r.finished_at < (select pgflight._now()) - make_interval(secs => v_age)
       -- a cancelled run may still have an attempt whose worker has not acknowledged: keep it
       and not exists (select from pgflight.steps s
                          join pgflight.step_attempts a on a.step_id = s.id
                        where s.run_id = r.id
                          and a.status in ('queued', 'claimed', 'running', 'cancel_requested',
                                           'awaiting_children', 'awaiting_approval'))
     order by r.created_at limit p_limit
       for update skip locked) r;
  if v_ids is null then
    return 0;
  end if;
  -- replica for the deletes below when the owner may (internals/_row_triggers); else the cascade
  v_role := pgflight._row_triggers_off();
  if v_role is null and pg_catalog.current_setting('session_replication_role') <> 'replica' then
    delete from pgflight.runs r where r.id = any (v_ids);
    return cardinality(v_ids);
  end if;

  with d as (
    delete from pgflight.steps s where s.run_id = any (v_ids) returning s.id
  )
  select coalesce(array_agg(d.id), '{}') into v_steps from d;
  delete from pgflight.step_attempts a where a.step_id = any (v_steps);
  delete from pgflight.approvals g where g.step_id = any (v_steps);
  delete from pgflight.waits w where w.step_id = any (v_steps);  -- waits_step_key_is_unique
  delete from pgflight.effects e where e.step_id = any (v_steps);
  delete from pgflight.budgets b where b.scope = 'step' and b.step_id = any (v_steps);  -- budgets_step_idx
  delete from pgflight.budgets b where b.scope = 'run' and b.run_id = any (v_ids);     -- budgets_run_idx
  delete from pgflight.agent_runs a where a.step_id = any (v_steps) or a.run_id = any (v_ids);
  delete from pgflight.runs r where r.id = any (v_ids);
  if v_role is not null then
    perform pgflight._row_triggers_on(v_role);  -- a definer of pgflight_privileged: the owner may not set it
  end if;
  return cardinality(v_ids);
end
$$;

CREATE OR REPLACE FUNCTION pgflight.reclaim_expired(p_limit integer DEFAULT 1000) RETURNS integer
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select pgflight._require_lane('operator', null, 'reclaim_expired');  -- acts on every workspace
  select pgflight._reclaim(pgflight._now(), pgflight._check_limit(p_limit))  -- 22023 for a negative limit
$$;

CREATE OR REPLACE FUNCTION pgflight.record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb DEFAULT NULL::jsonb) RETURNS TABLE(effect_id bigint, result jsonb, recorded boolean, lease_held boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_att record;
  v_eff record;
begin
  if p_attempt_id is null or p_token is null then
    perform pgflight._null_refused('record_effect', case when p_attempt_id is null then 'the attempt id'
                                                         else 'the fencing token' end);
  end if;
  if p_key is null or btrim(p_key) = '' then
    raise exception using errcode = '22023', message = 'effect key is required',
      hint = 'Pass a key that names the effect within its step, e.g. ''charge-invoice-42''.';
  end if;
  -- the fence: this token is the attempt's (whatever its status now) and a worker of this login
  -- claimed it; otherwise _reject_write raises (ZF003 unknown or outside the lanes, ZF012, ZF001)
  select a.id, a.step_id, a.status into v_att
    from pgflight.step_attempts a
   where a.id = p_attempt_id and a.fencing_token = p_token
     and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user);
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, 'record_effect');
  end if;
  -- key and receipt are capped (ZF005)
  perform pgflight._require_cap('max_name_bytes', (select s.max_name_bytes from pgflight.settings s),
                                octet_length(p_key), 'effect key (bytes)');
  perform pgflight._require_cap('max_receipt_bytes', (select s.max_receipt_bytes from pgflight.settings s),
                                octet_length(p_result::text), 'receipt (bytes)');
  perform pgflight._require_json_depth(p_result, 'receipt');
  if length(p_key) > 500 then  -- the effects check constraint, as 22023
    raise exception using errcode = '22023', message = 'effect key is longer than 500 characters',
      detail = format('got %s characters', length(p_key)), hint = 'Use a shorter key, e.g. a hash of the long one.';
  end if;
  insert into pgflight.effects as e (step_id, effect_key, result, attempt_id, recorded_at)
  values (v_att.step_id, p_key, p_result, p_attempt_id, pgflight._now())
  on conflict (step_id, effect_key) do nothing
  returning e.id, e.result into v_eff;
  if found then
    return query select v_eff.id, v_eff.result, true, v_att.status in ('claimed', 'running');
    return;
  end if;
  return query select e.id, e.result, false, v_att.status in ('claimed', 'running')
    from pgflight.effects e where e.step_id = v_att.step_id and e.effect_key = p_key;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_role text, p_block_type text, p_content jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(trace_id bigint, seq integer, created boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_seq integer;
  v_id bigint;
  v_cap integer;
  v_blocks integer;
begin
  -- a trace block is capped like a result (ZF005, nothing written)
  perform pgflight._require_cap('max_result_bytes', (select s.max_result_bytes from pgflight.settings s),
                                octet_length(p_content::text), 'trace block (bytes)');
  perform pgflight._require_json_depth(p_content, 'trace block');
  -- every option checked against its spec first (docs/options.md): 22023 naming the key
  p_options := pgflight._check_options('record_trace', p_options);
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'record_trace');
  v_seq := pgflight._opt_num(p_options, 'seq', null)::integer;
  if v_seq is null then
    select greatest(coalesce(max(t.seq) + 1, pgflight._seq_band_system()), pgflight._seq_band_system())
      into v_seq from pgflight.traces t
     where t.agent_run_id = v_run.id and t.iteration = p_iteration and t.seq >= pgflight._seq_band_system();
  end if;
  -- the iteration's blocks, at most the cap of them (a block already at this seq: a no-op below)
  select s.max_trace_blocks_per_iteration into v_cap from pgflight.settings s;
  select count(*)::integer into v_blocks
    from (select from pgflight.traces t where t.agent_run_id = v_run.id and t.iteration = p_iteration
           limit v_cap) x;
  if v_blocks >= v_cap and not exists (select from pgflight.traces t where t.agent_run_id = v_run.id
                                          and t.iteration = p_iteration and t.seq = v_seq) then
    raise exception using
      errcode = 'ZF005',
      message = 'trace block over the cap settings.max_trace_blocks_per_iteration',
      detail  = format('agent run %s iteration %s holds %s blocks; settings.max_trace_blocks_per_iteration is %s',
                       v_run.id, p_iteration, v_blocks, v_cap),
      hint    = 'Record fewer blocks per iteration (one block can carry a list), or raise the cap: '
                'UPDATE pgflight.settings SET max_trace_blocks_per_iteration = ...';
  end if;
  begin
    insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content,
                                 status, tokens, attempt_id, created_at, updated_at)
    values (v_run.id, p_iteration, v_seq, p_role, p_block_type, pgflight._opt_text(p_options, 'tool_use_id', null),
            pgflight._opt_text(p_options, 'tool_name', null), p_content,
            pgflight._opt_text(p_options, 'status', 'completed'),
            coalesce(pgflight._opt_num(p_options, 'tokens', null)::integer, ceil(length(coalesce(p_content::text, '')) / 4.0)::integer),
            p_attempt_id, v_now, v_now)
    on conflict on constraint block_is_unique do nothing
    returning id into v_id;
  exception when check_violation or not_null_violation then
    raise exception using errcode = '22023', message = 'malformed trace block', detail = sqlerrm,
      hint = 'role: user|assistant|system; block_type: thinking|text|tool_use|tool_result|api_error; '
             'status: completed|in_flight|interrupted; tool blocks need tool_use_id.';
  end;
  if v_id is null then
    return query select t.id, t.seq, false from pgflight.traces t
     where t.agent_run_id = v_run.id and t.iteration = p_iteration and t.seq = v_seq;
    return;
  end if;
  return query select v_id, v_seq, true;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.register_worker(p_name text, p_options jsonb DEFAULT '{}'::jsonb) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_id bigint;
  v_caps pgflight.settings;
begin
  -- every option checked against its spec first (docs/options.md): 22023 naming the key
  p_options := pgflight._check_options('register_worker', p_options);
  if p_name is null or btrim(p_name) = '' then
    raise exception using errcode = '22023', message = 'worker name is required',
      hint = 'Pass something that identifies the process, e.g. host:pid.';
  end if;
  -- The worker belongs to the registering login (workers.login defaults to session_user);
  -- its name and options are capped, and so is the number of its live workers, so a login cannot
  -- flood the table. The count uses workers_login_live_idx.
  select * into v_caps from pgflight.settings;
  perform pgflight._require_cap('max_name_bytes', v_caps.max_name_bytes, octet_length(p_name), 'worker name (bytes)');
  perform pgflight._require_cap('max_name_bytes', v_caps.max_name_bytes * 100,
                                octet_length(coalesce(p_options, '{}')::text), 'worker options (bytes; cap is 100 x)');
  perform pgflight._require_cap('max_live_workers_per_login', v_caps.max_live_workers_per_login,
                                (select count(*) + 1 from pgflight.workers w
                                  where w.login = session_user and w.stopped_at is null),
                                format('live workers of login %s', session_user));
  insert into pgflight.workers (name, hostname, pid, recipes, options, started_at, last_seen_at)
  values (p_name, pgflight._opt_text(p_options, 'hostname', null),
          pgflight._opt_num(p_options, 'pid', null)::integer,
          case when jsonb_typeof(p_options -> 'recipes') = 'array'
               then array(select jsonb_array_elements_text(p_options -> 'recipes')) end,
          coalesce(p_options, '{}'), pgflight._now(), pgflight._now())
  returning id into v_id;
  return v_id;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.replay_from(p_step_id bigint, p_actor text DEFAULT NULL::text, p_note text DEFAULT NULL::text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_lane_on_step('operator', p_step_id, 'replay_from');  -- tenants
  -- Lock order with purge_finished (runs FOR UPDATE SKIP LOCKED, then their steps): the run row
  -- first, FOR KEY SHARE, before any steps row. A purge that holds the run is waited for (nothing
  -- else held yet) and the step is then gone: ZF003. Once held, a purge skips the run. KEY SHARE
  -- does not wait for completions or cancels, which update runs rows FOR NO KEY UPDATE.
  perform from pgflight.runs r
   where r.id = (select s.run_id from pgflight.steps s where s.id = p_step_id)
     for key share of r;
  if not exists (select from pgflight.steps s where s.id = p_step_id) then
    raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
  end if;
  return pgflight._reopen_step(p_step_id, session_user::text, 'replayed', pgflight._actor_note(p_note, p_actor));
end
$$;

CREATE OR REPLACE FUNCTION pgflight.request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb DEFAULT NULL::jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(decision text, actor text, note text, payload jsonb, waiting boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_att pgflight.step_attempts;
  v_gate record;
  v_default text := coalesce(pgflight._opt_text(p_options, 'default_decision', null), 'reject');
  v_expires double precision := pgflight._opt_num(p_options, 'expires_in_s', null);
begin
  -- every option checked against its spec first (docs/options.md): 22023 naming the key
  p_options := pgflight._check_options('request_approval', p_options);
  if p_gate_key is null or btrim(p_gate_key) = '' then
    raise exception using errcode = '22023', message = 'gate key is required';
  end if;
  if v_default not in ('approve', 'reject') then
    raise exception using errcode = '22023', message = 'default_decision must be approve or reject',
      detail = format('got %L', v_default);
  end if;
  if v_expires is not null then perform pgflight._require_positive('expires_in_s', v_expires); end if;
  -- gate key and request are capped (ZF005, nothing written)
  perform pgflight._require_cap('max_name_bytes', (select s.max_name_bytes from pgflight.settings s),
                                octet_length(p_gate_key), 'gate key (bytes)');
  perform pgflight._require_cap('max_approval_request_bytes',
                                (select s.max_approval_request_bytes from pgflight.settings s),
                                octet_length(p_request::text), 'approval request (bytes)');
  perform pgflight._require_json_depth(p_request, 'approval request');
  v_att := pgflight._lock_held(p_attempt_id, p_token, 'request_approval');

  insert into pgflight.approvals as g (step_id, gate_key, request, default_decision, requested_at, expires_at)
  values (v_att.step_id, p_gate_key, p_request, v_default, v_now, v_now + make_interval(secs => v_expires))
  on conflict (step_id, gate_key) do update
     set request = coalesce(g.request, excluded.request),
         requested_at = coalesce(g.requested_at, excluded.requested_at),
         expires_at = coalesce(g.expires_at, excluded.expires_at),
         default_decision = case when g.requested_at is null then excluded.default_decision else g.default_decision end
  returning g.* into v_gate;

  if v_gate.decision is not null then
    return query select v_gate.decision, v_gate.actor, v_gate.note, v_gate.payload, false;
    return;
  end if;
  update pgflight.step_attempts set status = 'awaiting_approval' where id = p_attempt_id;
  perform pgflight._event(v_att.run_id, v_att.step_id, p_attempt_id, v_att.status, 'awaiting_approval',
                          v_att.worker_id, 'approval_requested', null,
                          jsonb_build_object('gate_key', p_gate_key, 'expires_at', v_gate.expires_at));
  return query select null::text, null::text, null::text, null::jsonb, true;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.reserve_budget(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_est_usd numeric) RETURNS TABLE(agent_run_id bigint, iteration integer, reserved_usd numeric, budget_ids bigint[])
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_refusal jsonb;
begin
  if p_est_usd is not null then  -- bounded, so the budgets' numeric(16, 8) cannot overflow
    perform pgflight._check_arg('est_usd', p_est_usd, 0, 1000000);
  end if;
  if p_est_usd is null or p_est_usd < 0 or p_iteration is null or p_iteration < 1 then
    raise exception using errcode = '22023', message = 'iteration must be >= 1 and est_usd >= 0',
      detail = format('iteration %s, est_usd %s', p_iteration, p_est_usd);
  end if;
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'reserve_budget');
  if v_run.reserved_attempt_id = p_attempt_id and v_run.reserved_iteration = p_iteration then
    return query select v_run.id, p_iteration, v_run.reserved_usd, v_run.reserved_budget_ids;
    return;
  end if;
  v_refusal := pgflight._reserve(v_run, p_attempt_id, p_iteration, p_est_usd, v_now);
  if v_refusal is not null then
    perform pgflight._raise_budget_exceeded(v_refusal);
  end if;
  return query select r.id, p_iteration, r.reserved_usd, r.reserved_budget_ids
                 from pgflight.agent_runs r where r.id = v_run.id;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.retry_step(p_step_id bigint, p_actor text DEFAULT NULL::text, p_note text DEFAULT NULL::text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_status text;
begin
  perform pgflight._require_lane_on_step('operator', p_step_id, 'retry_step');  -- tenants
  -- Lock order with purge_finished (runs FOR UPDATE SKIP LOCKED, then their steps): the run row
  -- first, FOR KEY SHARE, before any steps row. A purge that holds the run is waited for (nothing
  -- else held yet) and the step is then gone: ZF003. Once held, a purge skips the run. KEY SHARE
  -- does not wait for completions or cancels, which update runs rows FOR NO KEY UPDATE.
  perform from pgflight.runs r
   where r.id = (select s.run_id from pgflight.steps s where s.id = p_step_id)
     for key share of r;
  select a.status into v_status from pgflight.steps s
    join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
   where s.id = p_step_id;
  if not found then
    raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
  end if;
  if v_status <> 'dead_letter' then
    raise exception using errcode = 'ZF006', message = format('step %s is %s, not dead_letter', p_step_id, v_status),
      hint = 'retry_step is for dead letters; use replay_from to run a finished step again.';
  end if;
  return pgflight._reopen_step(p_step_id, session_user::text, 'retried', pgflight._actor_note(p_note, p_actor));
end
$$;

CREATE OR REPLACE FUNCTION pgflight.run_status(p_run_id bigint) RETURNS TABLE(run_id bigint, workspace text, recipe text, status text, created_at timestamp with time zone, finished_at timestamp with time zone, steps_total bigint, steps_queued bigint, steps_running bigint, steps_waiting bigint, steps_succeeded bigint, steps_dead_letter bigint, steps_cancelled bigint, attempts_total bigint, result jsonb, error jsonb)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_lane_on_run('reader', p_run_id, 'run_status');  -- tenants
  return query
  select r.id, w.name, r.recipe, r.status, r.created_at, r.finished_at,
         count(s.id),
         count(s.id) filter (where a.status = 'queued'),
         count(s.id) filter (where a.status in ('claimed', 'running', 'cancel_requested')),
         count(s.id) filter (where a.status in ('awaiting_children', 'awaiting_approval')),
         count(s.id) filter (where a.status = 'succeeded'),
         count(s.id) filter (where a.status = 'dead_letter'),
         count(s.id) filter (where a.status = 'cancelled'),
         coalesce(sum(s.last_attempt_no), 0)::bigint,
         (select ra.result from pgflight.step_attempts ra join pgflight.steps rs on rs.id = ra.step_id
           where rs.id = r.root_step_id and ra.attempt_no = rs.last_attempt_no),
         (select ra.error from pgflight.step_attempts ra join pgflight.steps rs on rs.id = ra.step_id
           where rs.id = r.root_step_id and ra.attempt_no = rs.last_attempt_no)
    from pgflight.runs r
    join pgflight.workspaces w on w.id = r.workspace_id
    left join pgflight.steps s on s.run_id = r.id
    left join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
   where r.id = p_run_id
   group by r.id, w.name;
  if not found then
    raise exception using errcode = 'ZF003', message = format('unknown run %s', p_run_id);
  end if;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.run_sweeps() RETURNS TABLE(sweep text, affected integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_state pgflight.sweep_state;
  v_now timestamptz := pgflight._now();
  v_reclaimed integer;
begin
  perform pgflight._require_lane('operator', null, 'run_sweeps');  -- acts on every workspace
  select s.* into v_state from pgflight.sweep_state s;
  v_reclaimed := pgflight.reclaim_expired(v_state.reclaim_batch);
  return query select 'reclaim_expired'::text, v_reclaimed;
  return query select 'wake_parents'::text, pgflight.wake_parents(1000);
  return query select 'expire_approvals'::text, pgflight.expire_approvals(1000);
  return query select 'expire_waits'::text, pgflight.expire_waits(1000);
  return query select 'enforce_budgets'::text, pgflight.enforce_budgets(1000);
  return query select 'fire_schedules'::text, pgflight.fire_schedules(1000);
  return query select 'wake_parked_keys'::text, pgflight.wake_parked_keys(1000);
  if v_state.last_partitions_at is null or abs(extract(epoch from v_now - v_state.last_partitions_at)) >= 60 then
    return query select 'maintain_partitions'::text, count(*)::integer from pgflight.maintain_partitions();
  end if;
  update pgflight.sweep_state s
     set last_pass_at = pgflight._now(),
         reclaim_batch = case when v_reclaimed >= v_state.reclaim_batch then least(v_state.reclaim_batch * 2, 5000)
                              else 1000 end
   where s.id in (select t.id from pgflight.sweep_state t for update skip locked);
end
$$;

CREATE OR REPLACE FUNCTION pgflight.schedule_run(p_workspace text, p_name text, p_cron text, p_recipe text, p_input jsonb DEFAULT '{}'::jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(schedule_id bigint, next_fire_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint := pgflight._workspace_id(p_workspace);
  v_now timestamptz := pgflight._now();
  v_tz text;
  v_overlap text;
  v_run_options jsonb;
  v_cron record;
  v_next timestamptz;
  v_id bigint;
  v_max_schedules integer;
  v_min_interval double precision;
  v_gap integer;
  v_count integer;
begin
  perform pgflight._require_lane('operator', v_ws, 'schedule_run');  -- tenants
  perform pgflight._require_known_keys(coalesce(p_options, '{}'), array['time_zone', 'overlap', 'run_options']);
  if p_name is null or btrim(p_name) = '' or length(p_name) > 200 then
    raise exception using errcode = '22023', message = 'schedule name is required',
      hint = 'Pass a non-blank name of at most 200 characters; the same name replaces the schedule.';
  end if;
  v_tz := coalesce(pgflight._opt_text(p_options, 'time_zone', null), 'UTC');
  begin
    perform v_now at time zone v_tz;
  exception when others then
    raise exception using errcode = '22023', message = format('unknown time zone %L', v_tz),
      hint = 'Pass an IANA zone name such as Europe/Paris or America/New_York.';
  end;
  v_overlap := coalesce(pgflight._opt_text(p_options, 'overlap', null), 'skip');
  if v_overlap not in ('skip', 'queue_one', 'allow') then
    raise exception using errcode = '22023', message = format('unknown overlap policy %L', v_overlap),
      hint = 'overlap is skip, queue_one or allow.';
  end if;
  v_run_options := coalesce(p_options -> 'run_options', '{}');
  if jsonb_typeof(v_run_options) <> 'object' or v_run_options ?| array['idempotency_key', 'submitted_by', 'not_before'] then
    raise exception using errcode = '22023', message = 'run_options must be an object of submit_run options',
      detail = format('got %s', v_run_options),
      hint = 'idempotency_key, submitted_by and not_before are set by the schedule.';
  end if;
  select * into v_cron from pgflight._cron_parse(p_cron);
  -- the shortest gap between two firings the expression allows (seconds)
  select s.max_schedules_per_workspace, s.min_schedule_interval_s into v_max_schedules, v_min_interval
    from pgflight.settings s;
  with t as (
    select h * 3600 + m * 60 + x as t
      from unnest(v_cron.hours) h, unnest(v_cron.minutes) m, unnest(v_cron.seconds) x
  ), g as (
    select t.t - lag(t.t) over (order by t.t) as gap from t
    union all
    select 86400 - max(t.t) + min(t.t) from t
  )
  select min(g.gap)::integer into v_gap from g;
  if v_gap < v_min_interval then
    raise exception using
      errcode = 'ZF005',
      message = format('cron expression %L fires more often than settings.min_schedule_interval_s', p_cron),
      detail  = format('two of its firings are %s s apart; settings.min_schedule_interval_s is %s', v_gap, v_min_interval),
      hint    = 'Fire less often (a wider step in the seconds or minutes field), or raise the floor: '
                'UPDATE pgflight.settings SET min_schedule_interval_s = ...';
  end if;
  v_next := pgflight._cron_next(v_cron.seconds, v_cron.minutes, v_cron.hours, v_cron.days, v_cron.months,
                                v_cron.weekdays, v_cron.any_day, v_cron.any_weekday, v_tz, v_now);
  if v_next is null then
    raise exception using errcode = '22023', message = format('cron expression %L never fires', p_cron),
      hint = 'Check the day and month fields (e.g. 30 February does not exist).';
  end if;
  -- a new name: the workspace's schedules under the cap, counted under its row's lock
  perform from pgflight.workspaces w where w.id = v_ws for no key update;
  if not exists (select from pgflight.schedules s where s.workspace_id = v_ws and s.name = p_name) then
    select count(*)::integer into v_count
      from (select from pgflight.schedules s where s.workspace_id = v_ws limit v_max_schedules) x;
    if v_count >= v_max_schedules then
      raise exception using
        errcode = 'ZF005',
        message = format('workspace %s over the cap settings.max_schedules_per_workspace', p_workspace),
        detail  = format('workspace %s has %s schedules; settings.max_schedules_per_workspace is %s',
                         p_workspace, v_count, v_max_schedules),
        hint    = 'Remove a schedule (unschedule_run), reuse a name to replace one, or raise the cap: '
                  'UPDATE pgflight.settings SET max_schedules_per_workspace = ...';
    end if;
  end if;
  -- a dry run of the submit each firing will make, rolled back: the sweep never meets a refusal
  begin
    perform pgflight.submit_run(p_workspace, p_recipe, coalesce(p_input, '{}'), v_run_options);
    raise exception using errcode = 'ZF999';
  exception when sqlstate 'ZF999' then
    null;
  end;

  insert into pgflight.schedules as s (workspace_id, name, cron, time_zone, recipe, input, run_options, overlap,
                                       seconds, minutes, hours, days, months, weekdays, any_day, any_weekday,
                                       next_fire_at, created_by)
  values (v_ws, p_name, p_cron, v_tz, p_recipe, coalesce(p_input, '{}'), v_run_options, v_overlap,
          v_cron.seconds, v_cron.minutes, v_cron.hours, v_cron.days, v_cron.months, v_cron.weekdays,
          v_cron.any_day, v_cron.any_weekday, v_next, session_user::text)
  on conflict on constraint schedule_name_is_unique_per_workspace do update
     set cron = excluded.cron, time_zone = excluded.time_zone, recipe = excluded.recipe, input = excluded.input,
         run_options = excluded.run_options, overlap = excluded.overlap, seconds = excluded.seconds,
         minutes = excluded.minutes, hours = excluded.hours, days = excluded.days, months = excluded.months,
         weekdays = excluded.weekdays, any_day = excluded.any_day, any_weekday = excluded.any_weekday,
         next_fire_at = excluded.next_fire_at, pending_fire_at = null, updated_at = v_now
  returning s.id into v_id;
  return query select v_id, v_next;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.set_global_limits(p_options jsonb) RETURNS TABLE(max_in_flight integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_lane('operator', null, 'set_global_limits');  -- acts on every workspace
  perform pgflight._require_known_keys(p_options, array['max_in_flight']);
  if p_options ? 'max_in_flight' then
    update pgflight.settings s set max_in_flight = pgflight._limit_option(p_options, 'max_in_flight', 0, 1e6, true)::integer;
    -- the cap's slot stripes (tables/flow_slots), rebuilt and reconciled
    perform pgflight._set_slot_cap(0, s.max_in_flight) from pgflight.settings s;
  end if;
  return query select s.max_in_flight from pgflight.settings s;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.set_recipe_limits(p_recipe text, p_options jsonb) RETURNS TABLE(recipe text, starts_per_s double precision, burst double precision, paused_at timestamp with time zone, paused_by text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_rate double precision;
  v_burst double precision;
begin
  perform pgflight._require_lane('operator', null, 'set_recipe_limits');  -- acts on every workspace
  perform pgflight._require_known_keys(p_options, array['starts_per_s', 'burst']);
  if p_recipe is null or btrim(p_recipe) = '' or length(p_recipe) > 200 then
    raise exception using errcode = '22023', message = 'recipe is required',
      hint = 'Pass a recipe name of at most 200 characters.';
  end if;
  v_rate := pgflight._limit_option(p_options, 'starts_per_s', 1e-6, 1e6, false);
  v_burst := coalesce(pgflight._limit_option(p_options, 'burst', 1, 1e6, false), greatest(1, v_rate));
  insert into pgflight.recipe_limits as l (recipe, starts_per_s, burst)
  values (p_recipe, v_rate, case when v_rate is not null then v_burst end)
  on conflict on constraint recipe_limits_pkey do update
     set starts_per_s = excluded.starts_per_s, burst = excluded.burst, tokens = null, refilled_at = null,
         updated_at = pgflight._now();
  -- a row with no limit and no pause is removed: the claim then skips the recipe checks entirely
  delete from pgflight.recipe_limits l where l.recipe = p_recipe and l.starts_per_s is null and l.paused_at is null;
  return query
    select p_recipe, l.starts_per_s, l.burst, l.paused_at, l.paused_by
      from (select 1) one left join pgflight.recipe_limits l on l.recipe = p_recipe;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.set_workspace_limits(p_workspace text, p_options jsonb) RETURNS TABLE(workspace text, max_in_flight integer, share integer, starts_per_s double precision, burst double precision, model_tokens_per_min bigint, paused_at timestamp with time zone, paused_by text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint := pgflight._workspace_id(p_workspace);
  v_old pgflight.workspace_limits;
  v_rate double precision;
begin
  perform pgflight._require_lane('operator', v_ws, 'set_workspace_limits');  -- tenants
  perform pgflight._require_known_keys(p_options, array['max_in_flight', 'share', 'starts_per_s', 'burst', 'model_tokens_per_min']);
  insert into pgflight.workspace_limits (workspace_id) values (v_ws) on conflict do nothing;
  select * into v_old from pgflight.workspace_limits l where l.workspace_id = v_ws for update;
  v_rate := case when p_options ? 'starts_per_s' then pgflight._limit_option(p_options, 'starts_per_s', 1e-6, 1e6, false)
                 else v_old.starts_per_s end;
  update pgflight.workspace_limits l
     set max_in_flight = case when p_options ? 'max_in_flight'
                              then pgflight._limit_option(p_options, 'max_in_flight', 0, 1e6, true)::integer
                              else l.max_in_flight end,
         share = case when p_options ? 'share'
                      then coalesce(pgflight._limit_option(p_options, 'share', 1, 1000, true)::integer, 1)
                      else l.share end,
         starts_per_s = v_rate,
         burst = case when v_rate is null then null
                      when p_options ? 'burst' then coalesce(pgflight._limit_option(p_options, 'burst', 1, 1e6, false), greatest(1, v_rate))
                      else coalesce(l.burst, greatest(1, v_rate)) end,
         -- a changed rate starts with a full bucket
         tokens = case when v_rate is distinct from l.starts_per_s then null else l.tokens end,
         model_tokens_per_min = case when p_options ? 'model_tokens_per_min'
                                     then pgflight._limit_option(p_options, 'model_tokens_per_min', 1, 1e15, true)::bigint
                                     else l.model_tokens_per_min end,
         updated_at = pgflight._now()
   where l.workspace_id = v_ws;
  -- the cap's slot stripes (tables/flow_slots), rebuilt and reconciled when the cap changes
  if p_options ? 'max_in_flight' then
    perform pgflight._set_slot_cap(v_ws, l.max_in_flight) from pgflight.workspace_limits l where l.workspace_id = v_ws;
  end if;
  return query
    select p_workspace, l.max_in_flight, l.share, l.starts_per_s, l.burst, l.model_tokens_per_min, l.paused_at, l.paused_by
      from pgflight.workspace_limits l where l.workspace_id = v_ws;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.spawn_children(p_attempt_id bigint, p_token bigint, p_children jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(children_total integer, created integer, parked boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_att pgflight.step_attempts;
  v_parent record;
  v_created integer;
  v_total integer;
  v_bad record;
  v_unknown record;
  v_max_bytes bigint;
  v_settings pgflight.settings;
  v_fail_fast boolean;
  v_children jsonb;
begin
  if p_children is null or jsonb_typeof(p_children) <> 'array' then
    raise exception using errcode = '22023', message = 'children must be a JSON array',
      hint = 'e.g. [{"key": "doc-1", "recipe": "review", "input": {...}}]';
  end if;
  select * into v_settings from pgflight.settings;
  perform pgflight._require_cap('max_children_per_call', v_settings.max_children_per_call,
                                jsonb_array_length(p_children), 'children in one call');
  v_fail_fast := (pgflight._check_options('spawn_children', p_options) ->> 'fail_fast')::boolean;
  v_att := pgflight._lock_held(p_attempt_id, p_token, 'spawn_children');
  v_max_bytes := v_settings.max_input_bytes;
  select e.ord, e.value into v_bad
    from jsonb_array_elements(p_children) with ordinality as e(value, ord)
   where jsonb_typeof(e.value) <> 'object'
      or jsonb_typeof(e.value -> 'key') is distinct from 'string' or btrim(e.value ->> 'key') = ''
      or length(e.value ->> 'key') > 512
      or jsonb_typeof(e.value -> 'recipe') is distinct from 'string' or btrim(e.value ->> 'recipe') = ''
      or length(e.value ->> 'recipe') > 256
      or pgflight._bad_child_flow(e.value -> 'options')
      or octet_length(coalesce(e.value -> 'input', '{}')::text) > v_max_bytes
   limit 1;
  if found then
    perform pgflight._require_cap('max_input_bytes', v_max_bytes,
                                  octet_length(coalesce(v_bad.value -> 'input', '{}')::text),
                                  format('child %s input (bytes)', v_bad.ord));
    raise exception using errcode = '22023', message = format('child %s is malformed', v_bad.ord),
      detail = left(v_bad.value::text, 200),
      hint = 'Each child needs a non-blank string key (at most 512 characters) and recipe (at most 256); '
             'a concurrency_limit needs a concurrency_key (a string of at most 200 characters).';
  end if;
  -- A child is key, recipe, input and options, nothing else: a step option beside options
  -- ({"backoff": ...} instead of {"options": {"backoff": ...}}) would be dropped without a word.
  select e.ord, k.key into v_unknown
    from jsonb_array_elements(p_children) with ordinality as e(value, ord),
         lateral jsonb_object_keys(e.value) as k(key)
   where k.key <> all (array['key', 'recipe', 'input', 'options'])
   order by e.ord, k.key
   limit 1;
  if found then
    raise exception using errcode = '22023',
      message = format('unknown key %s of spawn_children child %s', v_unknown.key, v_unknown.ord),
      detail = left((p_children -> (v_unknown.ord::integer - 1))::text, 200),
      hint = 'A child has key, recipe, input and options; step options (priority, max_attempts, lease_s, '
             'max_runtime_s, backoff, concurrency_key, concurrency_limit) go inside options.';
  end if;
  -- inputs nested deeper than the cap: one pass over the whole call (an input sits two levels
  -- down, [{"input": ...}]); the child is looked for only to name it
  if pgflight._json_too_deep(p_children, v_settings.max_json_depth + 2) then
    select e.ord, e.value into v_bad
      from jsonb_array_elements(p_children) with ordinality as e(value, ord)
     where pgflight._json_too_deep(e.value -> 'input', v_settings.max_json_depth)
     order by e.ord limit 1;
    if found then
      perform pgflight._require_json_depth(v_bad.value -> 'input', format('child %s input', v_bad.ord));
    end if;
  end if;
  -- Each child's options through the same step-options validator as submit_run (one
  -- rule, so priority 1.5 is refused on both paths); the error names the child ("option lease_s
  -- of spawn_children child 3 ..."). v_children holds the normalised options, read with plain casts.
  select jsonb_agg(case when e.value ? 'options'
                        then e.value || jsonb_build_object('options',
                               pgflight._check_options('spawn_children child ' || e.ord, e.value -> 'options'))
                        else e.value end order by e.ord)
    into v_children
    from jsonb_array_elements(p_children) with ordinality as e(value, ord);

  perform pgflight._require_cap('max_name_bytes', v_settings.max_name_bytes,
                                (select max(greatest(octet_length(e.value ->> 'key'), octet_length(e.value ->> 'recipe')))
                                   from jsonb_array_elements(p_children) as e(value)),
                                'child key or recipe (bytes)');

  select s.* into v_parent from pgflight.steps s where s.id = v_att.step_id for update;
  -- children of this parent once this call is done: those there already plus the new keys (a key
  -- that exists creates nothing, so spawning again after a crash stays within the cap)
  perform pgflight._require_cap('max_children_per_parent', v_settings.max_children_per_parent,
                                (select count(*) from pgflight.steps c where c.parent_id = v_parent.id)
                                + (select count(distinct e.value ->> 'key') from jsonb_array_elements(p_children) as e(value)
                                    where not exists (select from pgflight.steps c
                                                       where c.parent_id = v_parent.id and c.step_key = e.value ->> 'key')),
                                'children of the parent');

  with wanted as (
    select e.value ->> 'key' as step_key, e.value ->> 'recipe' as recipe,
           coalesce(e.value -> 'input', '{}') as input, coalesce(e.value -> 'options', '{}') as o
      from jsonb_array_elements(coalesce(v_children, '[]')) as e(value)
  ), inserted as (
    insert into pgflight.steps (run_id, parent_id, depth, step_key, recipe, input, priority, max_attempts,
                                backoff, lease_s, max_runtime_s, created_at, concurrency_key, concurrency_limit)
    select v_parent.run_id, v_parent.id, v_parent.depth + 1, w.step_key, w.recipe, w.input,
           coalesce((w.o ->> 'priority')::integer, v_parent.priority),
           coalesce((w.o ->> 'max_attempts')::integer, v_parent.max_attempts),
           coalesce(w.o -> 'backoff', v_parent.backoff),
           coalesce((w.o ->> 'lease_s')::double precision, v_parent.lease_s),
           coalesce((w.o ->> 'max_runtime_s')::double precision, v_parent.max_runtime_s),
           v_now,
           -- a child's concurrency key is its own, never inherited: a parent holding a slot of a
           -- key its children also need would wait on them forever
           w.o ->> 'concurrency_key',
           case when w.o ->> 'concurrency_key' is not null then coalesce((w.o ->> 'concurrency_limit')::integer, 1) end
      from wanted w
    on conflict (parent_id, step_key) where parent_id is not null do nothing
    returning id, run_id, recipe, priority, concurrency_key, concurrency_limit
  ), attempts as (
    insert into pgflight.step_attempts (step_id, run_id, attempt_no, recipe, priority, status, available_after, created_at,
                                        workspace_id, concurrency_key, concurrency_limit)
    select i.id, i.run_id, 1, i.recipe, i.priority, 'queued', v_now, v_now,
           v_att.workspace_id, i.concurrency_key, i.concurrency_limit
      from inserted i
    returning id, step_id, run_id
  ), logged as (
    insert into pgflight.events (at, run_id, step_id, attempt_id, from_status, to_status, reason, detail)
    select v_now, a.run_id, a.step_id, a.id, null, 'queued', 'queued', jsonb_build_object('parent_step_id', v_parent.id)
      from attempts a
  )
  select count(*)::integer into v_created from attempts;

  v_total := jsonb_array_length(p_children);
  if v_parent.children_pending + v_created > 0 then
    update pgflight.steps
       set children_pending = children_pending + v_created,
           fail_fast = coalesce(v_fail_fast, fail_fast)
     where id = v_parent.id;
    -- a large fan-out counts its children on stripes, so their ends do not queue on this row
    perform pgflight._fan_in_stripe(v_parent.id, v_created);
    update pgflight.step_attempts set status = 'awaiting_children' where id = p_attempt_id;
    perform pgflight._event(v_att.run_id, v_att.step_id, p_attempt_id, v_att.status, 'awaiting_children',
                            v_att.worker_id, 'children_spawned', null,
                            jsonb_build_object('created', v_created, 'named', v_total,
                                               'pending', v_parent.children_pending + v_created));
    if v_created > 0 then
      perform pgflight._notify_ready();
    end if;
    return query select v_total, v_created, true;
    return;
  end if;
  return query select v_total, v_created, false;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.start_step(p_attempt_id bigint, p_token bigint) RETURNS TABLE(attempt_id bigint, started_at timestamp with time zone, lease_expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_row record;
begin
  update pgflight.step_attempts a
     set status = 'running', started_at = v_now
   where a.id = p_attempt_id and a.fencing_token = p_token and (a.status || '') = 'claimed'
     -- only the login whose worker holds the attempt (else ZF012 from _reject_write)
     and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
  returning a.id, a.run_id, a.step_id, a.worker_id, a.started_at, a.lease_expires_at into v_row;
  if found then
    perform pgflight._event(v_row.run_id, v_row.step_id, v_row.id, 'claimed', 'running', v_row.worker_id, 'started');
    return query select v_row.id, v_row.started_at, v_row.lease_expires_at;
    return;
  end if;
  return query select a.id, a.started_at, a.lease_expires_at from pgflight.step_attempts a
    where a.id = p_attempt_id and a.fencing_token = p_token and (a.status || '') = 'running'
      and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user);
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, 'start_step');
  end if;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.submit_run(p_workspace text, p_recipe text, p_input jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(run_id bigint, step_id bigint, attempt_id bigint, created boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_ws bigint;
  v_ws_max_usd numeric;
  v_settings pgflight.settings;
  v_key text;
  v_hash text;
  v_size bigint;
  v_run bigint;
  v_step bigint;
  v_attempt bigint;
  v_existing record;
  v_not_before timestamptz;
  v_max_attempts integer;
  v_opts jsonb;
  v_ckey text;
  v_climit integer;
begin
  if p_recipe is null or btrim(p_recipe) = '' then
    raise exception using errcode = '22023', message = 'recipe is required',
      hint = 'Pass the name a worker registered with @recipe(...).';
  end if;
  if p_input is null then
    raise exception using errcode = '22023', message = 'input is required',
      hint = 'Pass ''{}''::jsonb for a recipe that takes no input.';
  end if;
  if length(p_recipe) > 256 then
    raise exception using errcode = '22023', message = 'recipe name is longer than 256 characters',
      detail = format('got %s characters', length(p_recipe)), hint = 'Use a short recipe name.';
  end if;
  -- every option checked against its spec (docs/options.md): unknown keys, types and bounds, 22023
  -- naming the key; v_opts is normalised, so the plain casts below cannot fail
  v_opts := pgflight._check_options('submit_run', p_options);
  select w.id, w.max_run_usd into v_ws, v_ws_max_usd from pgflight.workspaces w where w.name = p_workspace;
  -- one answer (ZF003) for a name unknown and one the login sees nothing of; ZF012 only where it
  -- reads and is no operator. The common case costs the one _may probe it always did.
  if not found or not pgflight._may('operator', v_ws) then
    if not found or not pgflight._may('reader', v_ws) then
      perform pgflight._unknown_workspace(p_workspace);
    end if;
    perform pgflight._require_lane('operator', v_ws, 'submit_run');
  end if;
  select * into v_settings from pgflight.settings;
  v_size := octet_length(p_input::text);
  if v_size > v_settings.max_input_bytes then
    raise exception using errcode = 'ZF005', message = 'input too large',
      detail = format('input is %s bytes; the cap is %s bytes', v_size, v_settings.max_input_bytes),
      hint = 'Store large payloads elsewhere and pass a reference, or raise settings.max_input_bytes.';
  end if;
  perform pgflight._require_json_depth(p_input, 'input');
  v_max_attempts := coalesce((v_opts ->> 'max_attempts')::integer, v_settings.default_max_attempts);
  -- delay_s or not_before (with a UTC offset), and the concurrency key and limit; the
  -- helpers only when their keys are there (most submits have none)
  v_not_before := v_now;
  if v_opts ?| array['delay_s', 'not_before', 'concurrency_key', 'concurrency_limit'] then
    v_not_before := pgflight._start_at(v_opts, v_now);
    select c.o_key, c.o_limit into v_ckey, v_climit from pgflight._concurrency_option(v_opts) c;
  end if;

  v_key := v_opts ->> 'idempotency_key';
  v_hash := encode(sha256(convert_to(p_input::text, 'UTF8')), 'hex');

  -- the root step's id is taken first, so the run row is written once, with it
  v_step := nextval('pgflight.steps_id_seq'::regclass);
  -- without a key the run is a plain insert (nothing can conflict: no speculative
  -- insertion, no entry in the partial unique index, tables/runs_idempotency_partial); with one,
  -- ON CONFLICT against that index. One statement, the row written once: one of the two inserts
  -- reads it.
  with src (workspace_id, recipe, idempotency_key, input_hash, submitted_by, options, max_usd, max_wall_s,
            max_iterations, max_tool_calls, created_at, root_step_id) as (
    select v_ws, p_recipe, v_key, v_hash, coalesce(v_opts ->> 'submitted_by', session_user::text), v_opts,
           coalesce((v_opts ->> 'max_usd')::numeric, v_ws_max_usd), (v_opts ->> 'max_wall_s')::double precision,
           (v_opts ->> 'max_iterations')::integer, (v_opts ->> 'max_tool_calls')::integer, v_now, v_step
  ), keyless as (
    insert into pgflight.runs (workspace_id, recipe, idempotency_key, input_hash, submitted_by, options,
                               max_usd, max_wall_s, max_iterations, max_tool_calls, created_at, root_step_id)
    select * from src where v_key is null
    returning id
  ), keyed as (
    insert into pgflight.runs (workspace_id, recipe, idempotency_key, input_hash, submitted_by, options,
                               max_usd, max_wall_s, max_iterations, max_tool_calls, created_at, root_step_id)
    select * from src where v_key is not null
    on conflict (workspace_id, idempotency_key) where idempotency_key is not null do nothing
    returning id
  )
  select k.id into v_run from (select id from keyless union all select id from keyed) k;

  if v_run is null then
    select r.id, r.input_hash, r.root_step_id, r.recipe into v_existing
      from pgflight.runs r where r.workspace_id = v_ws and r.idempotency_key = v_key;
    if v_existing.input_hash <> v_hash or v_existing.recipe <> p_recipe then
      raise exception using errcode = 'ZF004',
        message = format('idempotency key %L was already used with a different input', v_key),
        detail = format('run %s has recipe %s and input sha256 %s; this call has recipe %s and input sha256 %s',
                        v_existing.id, v_existing.recipe, v_existing.input_hash, p_recipe, v_hash),
        hint = 'Use a new idempotency key for a different job, or resubmit the original input.';
    end if;
    return query
      select v_existing.id, v_existing.root_step_id, a.id, false
        from pgflight.step_attempts a where a.step_id = v_existing.root_step_id
       order by a.attempt_no limit 1;
    return;
  end if;

  insert into pgflight.steps (id, run_id, parent_id, depth, step_key, recipe, input, priority, max_attempts,
                              backoff, lease_s, max_runtime_s, created_at, concurrency_key, concurrency_limit)
  values (v_step, v_run, null, 0, 'root', p_recipe, p_input,
          coalesce((v_opts ->> 'priority')::integer, 0), v_max_attempts,
          coalesce(v_opts -> 'backoff', '{}'),
          (v_opts ->> 'lease_s')::double precision, (v_opts ->> 'max_runtime_s')::double precision, v_now,
          v_ckey, v_climit);
  -- the queued event is the attempt's queue_event_id, shown by run_events (no events row)
  insert into pgflight.step_attempts (step_id, run_id, attempt_no, recipe, priority, status, available_after, created_at,
                                      workspace_id, concurrency_key, concurrency_limit, queue_event_id)
  values (v_step, v_run, 1, p_recipe, coalesce((v_opts ->> 'priority')::integer, 0), 'queued', v_not_before, v_now,
          v_ws, v_ckey, v_climit, nextval('pgflight.events_id_seq'))
  returning id into v_attempt;
  if v_not_before <= v_now then
    perform pgflight._notify_ready();
  end if;
  return query select v_run, v_step, v_attempt, true;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.uninstall_schedules() RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_count integer := 0;
  v_id bigint;
begin
  if not exists (select from pg_catalog.pg_extension e where e.extname = 'pg_cron') then
    return 0;
  end if;
  -- by job id: the jobs run as pgflight_cron, so unschedule(name), which looks for the
  -- caller's own job of that name, would not find them
  for v_id in select j.jobid from cron.job j
               where j.jobname like 'pgflight-%' and j.database = current_database() loop
    perform cron.unschedule(v_id);
    v_count := v_count + 1;
  end loop;
  return v_count;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.unschedule_run(p_workspace text, p_name text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_lane('operator', pgflight._workspace_id(p_workspace), 'unschedule_run');  -- tenants
  delete from pgflight.schedules s where s.workspace_id = pgflight._workspace_id(p_workspace) and s.name = p_name;
  return found;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.wake_parents(p_limit integer DEFAULT 1000) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_row record;
  v_count integer := 0;
begin
  perform pgflight._require_lane('operator', null, 'wake_parents');  -- acts on every workspace
  perform pgflight._check_limit(p_limit);  -- 22023 for a negative limit
  for v_row in
    select a.step_id from pgflight.step_attempts a
      join pgflight.steps s on s.id = a.step_id
     where a.status = 'awaiting_children' and s.children_pending <= 0
     limit p_limit
       for update of a skip locked
  loop
    if pgflight._wake(v_row.step_id, 'parent_resumed', 'wake_parents') then
      v_count := v_count + 1;
    end if;
  end loop;
  return v_count;
end
$$;

CREATE OR REPLACE FUNCTION pgflight.wake_parked_keys(p_limit integer DEFAULT 1000) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v_key record;
  v_scope record;
  v_lock text;
  v_free integer;
  v_woken integer := 0;
  v_n integer;
  v_timeout text := pg_catalog.current_setting('lock_timeout');
begin
  perform pgflight._require_lane('operator', null, 'wake_parked_keys');  -- acts on every workspace
  for v_key in
    select distinct a.workspace_id, a.concurrency_key, a.concurrency_limit
      from pgflight.step_attempts a
     where a.status = 'queued' and a.available_after = 'infinity' and a.concurrency_key is not null
     limit greatest(p_limit, 0)
  loop
    v_lock := 'key:' || v_key.workspace_id || ':' || v_key.concurrency_key;
    insert into pgflight.engine_locks (scope) values (v_lock) on conflict do nothing;
    continue when not exists (select from pgflight.engine_locks l where l.scope = v_lock for update skip locked);
    v_free := v_key.concurrency_limit - (select count(*) from pgflight.step_attempts a
                where a.workspace_id = v_key.workspace_id and a.concurrency_key = v_key.concurrency_key
                  and (a.status in ('claimed', 'running', 'cancel_requested')
                       or (a.status = 'queued' and a.available_after < 'infinity')))::integer;
    continue when v_free <= 0;
    update pgflight.step_attempts a set available_after = pgflight._now()
     where a.id in (select p.id from pgflight.step_attempts p
                     where p.workspace_id = v_key.workspace_id and p.concurrency_key = v_key.concurrency_key
                       and p.status = 'queued' and p.available_after = 'infinity'
                     order by p.priority desc, p.id
                     limit v_free
                       for update skip locked);
    get diagnostics v_n = row_count;
    v_woken := v_woken + v_n;
  end loop;
  -- the in-flight caps' slot stripes reconciled with the attempts table (tables/flow_slots): a
  -- lease that left the leased set by a path that bypassed the trigger cannot keep its slot
  for v_scope in
    select l.workspace_id as scope, l.max_in_flight as cap from pgflight.workspace_limits l where l.max_in_flight is not null
    union all
    select 0, s.max_in_flight from pgflight.settings s where s.max_in_flight is not null
  loop
    begin
      if v_timeout = '0' or pg_catalog.date_part('epoch', v_timeout::interval) > 0.1 then
        perform pg_catalog.set_config('lock_timeout', '100ms', true);
      end if;
      perform pgflight._set_slot_cap(v_scope.scope, v_scope.cap);
      perform pg_catalog.set_config('lock_timeout', v_timeout, true);
    exception when lock_not_available then
      perform pg_catalog.set_config('lock_timeout', v_timeout, true);
      raise log 'pgflight.wake_parked_keys: slot scope % skipped this pass (its rows stay locked)', v_scope.scope;
    end;
  end loop;
  delete from pgflight.flow_slot_returns f
   where not exists (select from pgflight.flow_slots s where s.scope = f.scope);
  -- key rows of keys with nothing queued or leased (created again by the next claim of the key)
  delete from pgflight.engine_locks l
   where l.scope in (select k.scope from pgflight.engine_locks k
                      where k.scope like 'key:%'
                        -- (two probes, one per partial index: queued, leased)
                        and not exists (select from pgflight.step_attempts a
                                         where a.workspace_id = substring(k.scope from '^key:(\d+):')::bigint
                                           and a.concurrency_key = substring(k.scope from '^key:\d+:(.*)$')
                                           and a.status = 'queued')
                        and not exists (select from pgflight.step_attempts a
                                         where a.workspace_id = substring(k.scope from '^key:(\d+):')::bigint
                                           and a.concurrency_key = substring(k.scope from '^key:\d+:(.*)$')
                                           and a.status in ('claimed', 'running', 'cancel_requested'))
                      limit 1000
                        for update skip locked);
  return v_woken;
end
$_$;

COMMENT ON TABLE pgflight.costs IS 'One row per model call: tokens (input, output, cache_creation, cache_read), usd (USD = tokens x model_prices / 1e6), the stop_reason, the transient errors retried before it (retries), and which agent, step, run and workspace it is billed to. Range-partitioned by agent_run_id: a partition is dropped once every agent run in it is purged.';

COMMENT ON TABLE pgflight.events IS 'Append-only log of transitions, partitioned by day on at (retention drops whole days, settings.events_keep_s). reason names the event: queued, claimed, started, succeeded, failed, retry_scheduled, lease_expired, deadline_exceeded, dead_lettered, released, cancel_requested, cancelled, children_spawned, parent_resumed, approval_requested, approval_decided, stale_result_rejected, retried, replayed, budget_exceeded.';

COMMENT ON VIEW pgflight.run_events IS 'The transition log: the events rows, and the submits, reclaim retries, started claims and successes the attempts record.';

COMMENT ON TABLE pgflight.traces IS 'Flight recorder, one row per block: role user|assistant|system, block_type thinking|text|tool_use|tool_result|api_error, content: the block as sent to or received from the Messages API, status completed|in_flight|interrupted (tool results), tokens: estimated tokens of the block (exact usage per call is in pgflight.costs), attempt_id: the attempt that wrote it. Range-partitioned by agent_run_id: a partition is dropped once every agent run in it is purged.';

reset role;
