-- Deploy pgflight:internals/_claim_fair

begin;

set local role pgflight_owner;

-- The fair claim: claim_batch's body after its checks and reclaim, whenever its fast path does
-- not apply (more than one lane, a cap, a rate limit, a pause or a concurrency key in play).
-- Claims up to p_batch_size attempts for worker p_worker_id; p_workspaces: the workspaces of the
-- login's worker lane (null: every workspace). The sections below, in the order they run:
--   1. Recipes: with any paused or rate-limited recipe, the claim names its recipes (the ones
--      queued, minus paused ones, each rate-limited one with its bucket's tokens), so paused work
--      is never walked past (_claim_recipes).
--   2. Lanes: the (workspace, recipe) pairs with queued work, found by a skip scan of the ready
--      indexes (_ready_lanes: one index probe per workspace or pair, whatever the backlog behind
--      it), and the limits of their workspaces. Paused workspaces are dropped.
--   3. The global cap shared fairly: while more than one unpaused workspace has queued work,
--      none takes more of the global cap than ceil(cap / those workspaces), counting the leases
--      it holds now (_claim_global_shares). A workspace alone with queued work may take the whole
--      cap. A lease under a cap is clamped to settings.max_lease_s_capped (_lease_attempts), so
--      capacity a workspace took while it was alone comes back within that time.
--   4. Turns and quotas: workspaces are served in a rotation that starts where the previous call
--      left off (sequence claim_turns); each gets a quota of the batch proportional to its share,
--      at least one while the batch has room (_claim_quotas). So a workspace with ready work is
--      served within ceil(workspaces / batch_size) calls, whatever another workspace's backlog;
--      priority orders work only inside a workspace.
--   5. In-flight caps (settings.max_in_flight, a workspace's max_in_flight): the slots this call
--      can take now from the caps' stripes (tables/flow_slots) without waiting, in one statement
--      for the global cap and every capped workspace (_take_slots_all). The batch is cut to the
--      global slots, a workspace's quota to its own; unused ones are given back, again in one
--      statement (_give_slots_back).
--   6. Pass one, all workspaces at once (no rate limit in play): one statement reads every
--      lane's candidates, the concurrency keys are checked for the whole batch and the leases
--      written in one statement (_claim_set). Each lease records the caps it counts against
--      (step_attempts.slots); the trigger step_attempts_return_slots gives them back when it
--      leaves the leased set.
--   7. Workspace by workspace: with a rate-limited workspace or recipe in play (pass one), and
--      in pass two, which fills what is left of the batch from the workspaces that had more. A
--      rate-limited workspace locks its workspace_limits row SKIP LOCKED (another claimer serving
--      it right now means this call skips it) and refills its bucket; with recipes named, each
--      recipe of the workspace is its own lane, a rate-limited one within its tokens.
--   8. The give-backs: the global slots not used, and the rate-limited recipes' charges.
-- Concurrency keys (in _claim_set): a candidate with a key is taken only while the key's leased
-- attempts are under its limit (counted under the key's engine_locks row, locked SKIP LOCKED);
-- the others are parked (available_after = 'infinity', out of the ready indexes) until a slot is
-- freed. No statement here waits on a lock (SKIP LOCKED), so no lock cycle can form; the one
-- exception, a key row created by another claimer that has not committed, is waited for in scope
-- order. No lock the claim takes can be held by a login (engine rows only; no advisory keys).
CREATE OR REPLACE FUNCTION pgflight._claim_fair(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_start boolean, p_now timestamp with time zone, p_workspaces bigint[]) RETURNS TABLE(attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint, step_key text, attempt_no integer, recipe text, input jsonb, lease_expires_at timestamp with time zone, deadline_at timestamp with time zone)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
declare
  v_left integer := p_batch_size;   -- what this call may still claim
  v_global integer;                 -- settings.max_in_flight (null: no global cap)
  v_recipes text[] := p_recipes;
  v_rated_recipes text[] := '{}';   -- rate-limited recipes this call holds the buckets of ...
  v_rated_left integer[] := '{}';   -- ... and the starts each may still take
  v_lane_ws bigint[];               -- the ready lanes: workspace ...
  v_lane_recipe text[];             -- ... and recipe (null: every recipe)
  -- per served workspace (same index):
  v_ws bigint[];                    -- its id
  v_share integer[];                -- its share (default 1)
  v_cap integer[];                  -- its in-flight cap (null: none)
  v_rated boolean[];                -- whether it has a rate limit
  v_fair integer[];                 -- the global slots it may still take (null: no limit)
  v_quota integer[];                -- its quota of this batch
  v_taken integer[];                -- the slots taken from its cap's stripes (null: none taken)
  v_ws_got integer[];               -- the attempts it got
  v_more boolean[];                 -- it filled its quota: it may have more
  v_slots_ws smallint[];            -- the caps its leases count against (step_attempts.slots)
  v_n integer;                      -- how many workspaces are served
  v_first integer;                  -- the first in turn order (0-based)
  v_fast boolean;                   -- pass one in one go
  -- the slots taken in one statement (_take_slots_all), per scope (0: the global cap)
  v_scopes bigint[];
  v_wants integer[];
  v_t_scope bigint[];
  v_t_got integer[];
  v_t_stripe smallint[];
  v_back integer[];
  v_global_stripe smallint;
  -- one workspace's turn in section 7
  v_w integer;
  v_ws_id bigint;
  v_q integer;
  v_got_ws integer;
  v_got integer;
  v_tokens double precision;
  v_lim pgflight.workspace_limits;
  v_idx integer;
  v_ws_taken integer;
  v_ws_stripe smallint;
  v_slots smallint;
  v_lease_ws bigint;
begin
  -- 1. recipes: the paused and rate-limited ones (nothing to do while no recipe has a limit)
  if exists (select from pgflight.recipe_limits) then
    select r.recipes, r.rated, r.rated_left into v_recipes, v_rated_recipes, v_rated_left
      from pgflight._claim_recipes(p_recipes, p_now) r;
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

  -- 3. the global cap shared fairly: the batch cut to what the served workspaces' shares leave
  select s.max_in_flight into v_global from pgflight.settings s;
  if v_global is not null then
    v_fair := pgflight._claim_global_shares(v_global, v_recipes, v_lane_ws, v_ws, v_left);
    if v_fair is not null then
      v_left := least(v_left, (select sum(f)::integer from unnest(v_fair) f));
      if v_left <= 0 then
        return;
      end if;
    end if;
  end if;

  -- 4. this call's turn: start after the workspaces the previous calls served (with more
  -- workspaces than the batch holds, the next call starts a batch further on); the quotas
  v_first := ((nextval('pgflight.claim_turns') * case when v_n > v_left then v_left else 1 end) % v_n)::integer;
  v_quota := pgflight._claim_quotas(v_left, v_share, v_first, v_fair);

  -- 5. the in-flight caps: the slots this call can take now, in one statement for the global
  -- cap (the whole batch) and, without rate limits, every capped workspace (its quota). A
  -- global cap that leaves less than the batch: the quotas again, of what it left. From here
  -- on, every way out passes the give-backs
  v_fast := not (true = any (v_rated)) and v_rated_recipes = '{}';
  v_taken := array_fill(null::integer, array[v_n]);
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
  if v_scopes <> '{}' then
    select array_agg(t.scope), array_agg(t.got), array_agg(t.stripe)
      into v_t_scope, v_t_got, v_t_stripe
      from pgflight._take_slots_all(v_scopes, v_wants) t;
    for v_i in 1 .. cardinality(v_t_scope) loop
      v_w := array_position(v_ws, v_t_scope[v_i]);
      if v_w is not null then
        v_taken[v_w] := v_t_got[v_i];
      end if;
    end loop;
    if v_global is not null then
      v_idx := array_position(v_t_scope, 0::bigint);
      v_global_stripe := v_t_stripe[v_idx];
      if v_t_got[v_idx] <= 0 then
        perform pgflight._give_slots_back(v_t_scope, v_t_stripe, v_t_got);
        return;
      elsif v_t_got[v_idx] < v_left then
        v_left := v_t_got[v_idx];
        v_quota := pgflight._claim_quotas(v_left, v_share, v_first, v_fair);
      end if;
    end if;
  end if;

  -- 6. pass one in one go (no rate limit in play): each workspace's quota, cut to the slots
  -- taken from its stripes, claimed by one set of statements
  v_more := array_fill(false, array[v_n]);
  v_ws_got := array_fill(0, array[v_n]);
  if v_fast then
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

  -- 7. workspace by workspace, in turn order: pass one when a rate limit is in play (pass one
  -- went above otherwise), and pass two, only when some workspace came up short and another may
  -- have more
  for v_pass in 1 .. 2 loop
    continue when v_pass = 1 and v_fast;
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
        v_q := least(v_q, v_fair[v_w] - v_ws_got[v_w]);  -- 3: its share of the global cap
        continue when v_q <= 0;
      end if;

      -- a rate-limited workspace: one claimer at a time refills and charges its bucket
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
          -- one lane per recipe of this workspace, each rate-limited recipe within its tokens
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

  -- 8. the give-backs: the global slots taken and not used, and what the rate-limited recipes took
  if v_global is not null and v_left > 0 then
    update pgflight.flow_slots s set held = s.held - v_left where s.scope = 0 and s.stripe = v_global_stripe;
  end if;
  for v_idx in 1 .. cardinality(v_rated_recipes) loop
    update pgflight.recipe_limits l
       set tokens = l.tokens - (floor(l.tokens)::integer - v_rated_left[v_idx])
     where l.recipe = v_rated_recipes[v_idx];
  end loop;
end
$$;

COMMENT ON FUNCTION pgflight._claim_fair(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_start boolean, p_now timestamp with time zone, p_workspaces bigint[]) IS 'Internal: claim_batch''s fair claim across workspaces with caps, keys, rate limits and pause (its sections: recipes, lanes, global shares, turns and quotas, caps, pass one at once, workspace by workspace, give-backs).';

REVOKE ALL ON FUNCTION pgflight._claim_fair(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_start boolean, p_now timestamp with time zone, p_workspaces bigint[]) FROM PUBLIC;

commit;
