-- Revert pgflight:internals/_claim_fair: restores the previous definition, deploy/internals/_claim_fair@v1.0.0.sql (written by scripts/gen_sql_scripts.py)

begin;

set local role pgflight_owner;

-- Claim up to p_batch_size attempts fairly across workspaces (see the head of this file).
-- Called by claim_batch after its checks and reclaim. p_workspaces: the workspaces of the login's
-- worker lane (null: every workspace).
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

COMMENT ON FUNCTION pgflight._claim_fair(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_start boolean, p_now timestamp with time zone, p_workspaces bigint[]) IS 'Internal: claim_batch''s fair claim across workspaces with caps, keys, rate limits and pause.';

REVOKE ALL ON FUNCTION pgflight._claim_fair(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_start boolean, p_now timestamp with time zone, p_workspaces bigint[]) FROM PUBLIC;

commit;
