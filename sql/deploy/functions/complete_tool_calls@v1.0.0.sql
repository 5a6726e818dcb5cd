-- Deploy pgflight:functions/complete_tool_calls

begin;

set local role pgflight_owner;

-- Complete an iteration's tool calls in one transaction and, with p_next_iteration, admit the next
-- model call in the same transaction: the agent loop's second (and last) write of an iteration.
-- p_results: a JSON array of tool_result blocks, each naming its call by tool_use_id; stored as
-- complete_tool_call does (first result wins). p_next_iteration / p_est_usd: the admission of
-- reserve_budget for that call (iteration cap, wall-time and USD caps, est USD reserved; C24).
-- A refused admission does not undo the results: they are stored, nothing is reserved, and the
-- refusal comes back as reserved = false with refusal = {message, detail, hint} of the ZF007 that
-- reserve_budget would raise (the client raises it).
-- When record_model_call already reserved the next call (its p_next_est_usd, priced before the tool
-- results existed), the reservation is re-priced to p_est_usd, the price of the request about to be
-- sent: an increase is admitted against the USD caps of the budgets it was taken on (a refusal
-- releases the reservation and comes back as above), a decrease is given back; the wall-time caps
-- are checked again. The admitted reservation is marked reserved_call_out: its request leaves next,
-- and an attempt that ends before its answer is recorded is charged for it (_release_reservation).
-- Without
-- p_next_iteration that reservation is given back: the client is not about to make the call (it
-- stores what its tools did before it parks the attempt, e.g. to wait for sub-agents, or fails),
-- and money held while the attempt waits would be kept from the agent's sub-agents.
-- Returns: stored (tool_use ids stored now), reserved, reserved_usd.
-- Errors: ZF003 no such tool_use (nothing stored), ZF001, ZF002 (fence), 22023 malformed results,
-- iteration < 1 or est_usd < 0, ZF005 results nested deeper than settings.max_json_depth (the
-- array counts as a level).
-- Agent server time: the fence and the store of _store_tool_results run here, not
-- through the helpers (each helper call, with its SET clauses, cost more than its statements);
-- _agent_fence still raises on a miss and _store_tool_results on bad results. The store runs on a
-- generic plan, as in the helper (a custom plan was made anew at every call); so does the rest of
-- the function: index lookups by primary key.
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

COMMENT ON FUNCTION pgflight.complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_results jsonb, p_next_iteration integer, p_est_usd numeric) IS 'Store an iteration''s tool results and admit the next model call, in one transaction; a refused admission is returned (reserved = false, refusal), not raised. Errors: ZF003, ZF001, ZF002, 22023.';

REVOKE ALL ON FUNCTION pgflight.complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_results jsonb, p_next_iteration integer, p_est_usd numeric) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_results jsonb, p_next_iteration integer, p_est_usd numeric) TO pgflight_worker;

commit;
