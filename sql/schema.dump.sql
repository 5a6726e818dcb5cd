-- Name: pgflight; Type: SCHEMA; Schema: -; Owner: pgflight_owner

CREATE SCHEMA pgflight;

ALTER SCHEMA pgflight OWNER TO pgflight_owner;

-- Name: SCHEMA pgflight; Type: COMMENT; Schema: -; Owner: pgflight_owner

COMMENT ON SCHEMA pgflight IS 'pgflight: durable execution engine. Tables are private; call the API functions.';

-- Name: _actor_note(text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._actor_note(p_note text, p_actor text) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case when p_actor is null or p_actor = session_user::text then p_note
              else concat_ws(' ', p_note, format('[on behalf of %s]', p_actor)) end
$$;

ALTER FUNCTION pgflight._actor_note(p_note text, p_actor text) OWNER TO pgflight_owner;

-- Name: FUNCTION _actor_note(p_note text, p_actor text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._actor_note(p_note text, p_actor text) IS 'Internal: an operator''s note with the unauthenticated p_actor appended as "[on behalf of ...]".';

-- Name: _now(); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._now() RETURNS timestamp with time zone
    LANGUAGE sql
    AS $$
  select case when coalesce(pg_catalog.current_setting('pgflight.fake_now', true), '') = ''
              then pg_catalog.clock_timestamp()
              else pgflight._fake_now(pg_catalog.current_setting('pgflight.fake_now', true)) end
$$;

ALTER FUNCTION pgflight._now() OWNER TO pgflight_owner;

-- Name: FUNCTION _now(); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._now() IS 'The engine clock: clock_timestamp(), or the session''s pgflight.fake_now when the fake clock is allowed.';

-- Name: agent_runs; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.agent_runs (
    id bigint NOT NULL,
    step_id bigint NOT NULL,
    run_id bigint NOT NULL,
    workspace_id bigint NOT NULL,
    model text NOT NULL,
    system_prompt text DEFAULT ''::text NOT NULL,
    system_prompt_hash text NOT NULL,
    max_iterations integer DEFAULT 25 NOT NULL,
    max_tool_calls integer DEFAULT 50 NOT NULL,
    iterations integer DEFAULT 0 NOT NULL,
    tool_calls integer DEFAULT 0 NOT NULL,
    input_tokens bigint DEFAULT 0 NOT NULL,
    output_tokens bigint DEFAULT 0 NOT NULL,
    cache_creation_tokens bigint DEFAULT 0 NOT NULL,
    cache_read_tokens bigint DEFAULT 0 NOT NULL,
    usd numeric(16,8) DEFAULT 0 NOT NULL,
    budget_ids bigint[] DEFAULT '{}'::bigint[] NOT NULL,
    reserved_usd numeric(16,8) DEFAULT 0 NOT NULL,
    reserved_attempt_id bigint,
    reserved_iteration integer,
    reserved_budget_ids bigint[],
    options jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    updated_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT caps_are_positive CHECK (((max_iterations > 0) AND (max_tool_calls >= 0))),
    CONSTRAINT reservation_is_whole CHECK (((reserved_attempt_id IS NULL) = ((reserved_usd = (0)::numeric) AND (reserved_iteration IS NULL)))),
    CONSTRAINT totals_are_not_negative CHECK (((iterations >= 0) AND (tool_calls >= 0) AND (usd >= (0)::numeric)))
);

ALTER TABLE pgflight.agent_runs OWNER TO pgflight_owner;

-- Name: TABLE agent_runs; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.agent_runs IS 'One per agent step, across its attempts. max_iterations / max_tool_calls: per-agent caps (model calls, tool calls). Totals: iterations, tool_calls, tokens, usd (USD). budget_ids: the tree budgets (pgflight.budgets: the run, every ancestor agent with a cap, this agent) that bind its spend. reserved_*: the USD reserved for the model call in flight (attempt, iteration, budgets), replaced by the actual cost when record_model_call settles it, released by enforce_budgets when the attempt lapsed.';

-- Name: _agent_fence(bigint, bigint, bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._agent_fence(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_operation text) RETURNS pgflight.agent_runs
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_run pgflight.agent_runs;
begin
  select r.* into v_run
    from pgflight.step_attempts a
    join pgflight.agent_runs r on r.step_id = a.step_id
   where a.id = p_attempt_id and a.fencing_token = p_token and a.status in ('claimed', 'running')
     and r.id = p_agent_run_id
     -- issue 13: only the login whose worker holds the attempt (else ZF012 from _reject_write)
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

ALTER FUNCTION pgflight._agent_fence(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_operation text) OWNER TO pgflight_owner;

-- Name: FUNCTION _agent_fence(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_operation text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._agent_fence(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_operation text) IS 'Internal: fence an agent write by (attempt, token); returns the agent run, locked. ZF001, ZF002, ZF003.';

-- Name: _backoff_s(integer, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._backoff_s(p_failed integer, p_backoff jsonb) RETURNS double precision
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select greatest(0, least(pgflight._opt_num(p_backoff, 'max_s', 300),
                           pgflight._opt_num(p_backoff, 'base_s', 1)
                           * power(pgflight._opt_num(p_backoff, 'factor', 2), greatest(p_failed - 1, 0)))
              * (1 + pgflight._opt_num(p_backoff, 'jitter', 0.2) * (2 * random() - 1)))
$$;

ALTER FUNCTION pgflight._backoff_s(p_failed integer, p_backoff jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION _backoff_s(p_failed integer, p_backoff jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._backoff_s(p_failed integer, p_backoff jsonb) IS 'Internal: retry delay in seconds, min(max_s, base_s * factor^(n-1)) times 1 +/- jitter.';

-- Name: _bad_child_options(jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._bad_child_options(p_options jsonb) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_key text;
  v_num numeric;
begin
  if p_options is null or jsonb_typeof(p_options) <> 'object' then
    return false;  -- a non-object is reported by the caller's own check
  end if;
  if p_options ? 'backoff' and jsonb_typeof(p_options -> 'backoff') <> 'object' then
    return true;
  end if;
  foreach v_key in array array['priority', 'max_attempts', 'lease_s', 'max_runtime_s'] loop
    continue when not p_options ? v_key;
    if jsonb_typeof(p_options -> v_key) <> 'number' then
      return true;
    end if;
    v_num := (p_options ->> v_key)::numeric;
    if (v_key in ('priority', 'max_attempts') and v_num <> trunc(v_num))
       or (v_key = 'max_attempts' and v_num < 1)
       or (v_key in ('lease_s', 'max_runtime_s') and v_num <= 0) then
      return true;
    end if;
  end loop;
  return false;
end
$$;

ALTER FUNCTION pgflight._bad_child_options(p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION _bad_child_options(p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._bad_child_options(p_options jsonb) IS 'Internal: true when a child''s options object has a malformed priority, max_attempts, lease_s, max_runtime_s or backoff.';

-- Name: _call_budget_ids(pgflight.agent_runs, timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._call_budget_ids(p_run pgflight.agent_runs, p_now timestamp with time zone) RETURNS bigint[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_day date := (p_now at time zone 'UTC')::date;
  v_cap numeric;
  v_id bigint;
  v_limit numeric;
begin
  select w.daily_usd_cap, b.id, b.limit_usd into v_cap, v_id, v_limit
    from pgflight.workspaces w
    left join pgflight.budgets b on b.scope = 'workspace_day' and b.workspace_id = w.id and b.day = v_day
   where w.id = p_run.workspace_id;
  if v_cap is null then
    return p_run.budget_ids;
  end if;
  if v_id is null then
    insert into pgflight.budgets (scope, workspace_id, day, limit_usd, started_at)
    values ('workspace_day', p_run.workspace_id, v_day, v_cap, p_now)
    on conflict (workspace_id, day) where scope = 'workspace_day' do nothing
    returning id, limit_usd into v_id, v_limit;
    if v_id is null then  -- created concurrently
      select b.id, b.limit_usd into v_id, v_limit from pgflight.budgets b
       where b.scope = 'workspace_day' and b.workspace_id = p_run.workspace_id and b.day = v_day;
    end if;
  end if;
  if v_limit is distinct from v_cap then
    update pgflight.budgets set limit_usd = v_cap where id = v_id;
  end if;
  return p_run.budget_ids || v_id;
end
$$;

ALTER FUNCTION pgflight._call_budget_ids(p_run pgflight.agent_runs, p_now timestamp with time zone) OWNER TO pgflight_owner;

-- Name: FUNCTION _call_budget_ids(p_run pgflight.agent_runs, p_now timestamp with time zone); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._call_budget_ids(p_run pgflight.agent_runs, p_now timestamp with time zone) IS 'Internal: ids of the budgets a call of this agent is charged to (tree budgets + today''s workspace budget).';

-- Name: _cancel_steps(bigint[], text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._cancel_steps(p_step_ids bigint[], p_actor text, p_reason text) RETURNS TABLE(cancelled integer, cancel_requested integer)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

ALTER FUNCTION pgflight._cancel_steps(p_step_ids bigint[], p_actor text, p_reason text) OWNER TO pgflight_owner;

-- Name: FUNCTION _cancel_steps(p_step_ids bigint[], p_actor text, p_reason text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._cancel_steps(p_step_ids bigint[], p_actor text, p_reason text) IS 'Internal: cancel the live attempts of these steps; returns how many were cancelled and how many were leased and became cancel_requested.';

-- Name: _cancel_tree(bigint, bigint, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._cancel_tree(p_run_id bigint, p_step_id bigint, p_actor text, p_reason text) RETURNS TABLE(cancelled integer, cancel_requested integer)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

ALTER FUNCTION pgflight._cancel_tree(p_run_id bigint, p_step_id bigint, p_actor text, p_reason text) OWNER TO pgflight_owner;

-- Name: FUNCTION _cancel_tree(p_run_id bigint, p_step_id bigint, p_actor text, p_reason text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._cancel_tree(p_run_id bigint, p_step_id bigint, p_actor text, p_reason text) IS 'Internal: cancel every live attempt of a run (p_step_id null) or of a subtree, until none is left.';

-- Name: _complete_many(bigint[], bigint[], jsonb[], timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_now timestamp with time zone) RETURNS TABLE(attempt_id bigint, outcome text)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

ALTER FUNCTION pgflight._complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_now timestamp with time zone) OWNER TO pgflight_owner;

-- Name: FUNCTION _complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_now timestamp with time zone); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_now timestamp with time zone) IS 'Internal: complete attempts set-based; per attempt succeeded | lease_lost | cancelled.';

-- Name: _decide(bigint, text, text, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._decide(p_gate_id bigint, p_decision text, p_actor text, p_note text, p_reason text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

ALTER FUNCTION pgflight._decide(p_gate_id bigint, p_decision text, p_actor text, p_note text, p_reason text) OWNER TO pgflight_owner;

-- Name: FUNCTION _decide(p_gate_id bigint, p_decision text, p_actor text, p_note text, p_reason text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._decide(p_gate_id bigint, p_decision text, p_actor text, p_note text, p_reason text) IS 'Internal: record a gate decision and requeue the step parked at it.';

-- Name: _event(bigint, bigint, bigint, text, text, bigint, text, text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._event(p_run_id bigint, p_step_id bigint, p_attempt_id bigint, p_from text, p_to text, p_worker_id bigint, p_reason text, p_actor text DEFAULT NULL::text, p_detail jsonb DEFAULT NULL::jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- PL/pgSQL rather than SQL: its INSERT plan is cached across calls, a SQL function's is not
  insert into pgflight.events (at, run_id, step_id, attempt_id, from_status, to_status, worker_id, reason, actor, detail)
  values (pgflight._now(), p_run_id, p_step_id, p_attempt_id, p_from, p_to, p_worker_id, p_reason, p_actor, p_detail);
end
$$;

ALTER FUNCTION pgflight._event(p_run_id bigint, p_step_id bigint, p_attempt_id bigint, p_from text, p_to text, p_worker_id bigint, p_reason text, p_actor text, p_detail jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION _event(p_run_id bigint, p_step_id bigint, p_attempt_id bigint, p_from text, p_to text, p_worker_id bigint, p_reason text, p_actor text, p_detail jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._event(p_run_id bigint, p_step_id bigint, p_attempt_id bigint, p_from text, p_to text, p_worker_id bigint, p_reason text, p_actor text, p_detail jsonb) IS 'Internal: append one events row.';

-- Name: _fail_attempt(bigint, text, text, jsonb, boolean, double precision, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._fail_attempt(p_attempt_id bigint, p_from text, p_status text, p_error jsonb, p_retryable boolean, p_retry_after_s double precision, p_reason text, p_actor text DEFAULT NULL::text) RETURNS TABLE(outcome text, next_attempt_id bigint, available_after timestamp with time zone)
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

ALTER FUNCTION pgflight._fail_attempt(p_attempt_id bigint, p_from text, p_status text, p_error jsonb, p_retryable boolean, p_retry_after_s double precision, p_reason text, p_actor text) OWNER TO pgflight_owner;

-- Name: FUNCTION _fail_attempt(p_attempt_id bigint, p_from text, p_status text, p_error jsonb, p_retryable boolean, p_retry_after_s double precision, p_reason text, p_actor text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._fail_attempt(p_attempt_id bigint, p_from text, p_status text, p_error jsonb, p_retryable boolean, p_retry_after_s double precision, p_reason text, p_actor text) IS 'Internal: end an attempt unsuccessfully; returns outcome retry (with the next attempt and when it becomes claimable), dead_letter or cancelled (the run had already ended).';

-- Name: _fake_now(text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._fake_now(p_value text) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if not (select s.allow_fake_clock from pgflight.settings s) then
    raise exception using
      errcode = 'ZF009',
      message = 'the fake clock is disabled',
      detail  = format('pgflight.fake_now is set to %L in this session', p_value),
      hint    = 'RESET pgflight.fake_now, or (tests only) UPDATE pgflight.settings SET allow_fake_clock = true.';
  end if;
  return p_value::timestamptz;
end
$$;

ALTER FUNCTION pgflight._fake_now(p_value text) OWNER TO pgflight_owner;

-- Name: FUNCTION _fake_now(p_value text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._fake_now(p_value text) IS 'Internal: the fake instant of a test session. Raises ZF009 unless settings.allow_fake_clock.';

-- Name: _iteration_refusal(pgflight.agent_runs, integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._iteration_refusal(p_run pgflight.agent_runs, p_iteration integer) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_iteration <= p_run.max_iterations then
    return null;
  end if;
  return jsonb_build_object(
    'message', format('budget exceeded: agent run %s may make %s model calls, this is call %s',
                      p_run.id, p_run.max_iterations, p_iteration),
    'detail',  format('scope=agent cap=max_iterations max_iterations=%s iteration=%s', p_run.max_iterations, p_iteration),
    'hint',    'Raise max_iterations for the agent (input caps, or the run''s max_iterations option).');
end
$$;

ALTER FUNCTION pgflight._iteration_refusal(p_run pgflight.agent_runs, p_iteration integer) OWNER TO pgflight_owner;

-- Name: FUNCTION _iteration_refusal(p_run pgflight.agent_runs, p_iteration integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._iteration_refusal(p_run pgflight.agent_runs, p_iteration integer) IS 'Internal: the ZF007 refusal when p_iteration passes the agent''s max_iterations, else null.';

-- Name: _lane_workspaces(text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._lane_workspaces(p_lane text) RETURNS bigint[]
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case when pgflight._may(p_lane, null) then null
              else coalesce((select array_agg(distinct g.workspace_id) from pgflight.workspace_grants g
                              where g.login = session_user and g.workspace_id is not null
                                and (g.lane = p_lane or p_lane = 'reader')),
                            '{}') end
$$;

ALTER FUNCTION pgflight._lane_workspaces(p_lane text) OWNER TO pgflight_owner;

-- Name: FUNCTION _lane_workspaces(p_lane text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._lane_workspaces(p_lane text) IS 'Internal: ids of the workspaces the login may act on in this lane; null for every workspace.';

-- Name: step_attempts; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.step_attempts (
    id bigint NOT NULL,
    step_id bigint NOT NULL,
    run_id bigint NOT NULL,
    attempt_no integer NOT NULL,
    recipe text NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    available_after timestamp with time zone NOT NULL,
    worker_id bigint,
    fencing_token bigint,
    lease_s double precision,
    claimed_at timestamp with time zone,
    started_at timestamp with time zone,
    lease_expires_at timestamp with time zone,
    deadline_at timestamp with time zone,
    finished_at timestamp with time zone,
    result jsonb,
    error jsonb,
    reason text,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT finished_at_is_after_claimed_at CHECK (((finished_at IS NULL) OR (claimed_at IS NULL) OR (finished_at >= claimed_at))),
    CONSTRAINT leased_attempt_has_owner CHECK (((status <> ALL (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text])) OR ((worker_id IS NOT NULL) AND (fencing_token IS NOT NULL) AND (lease_expires_at IS NOT NULL)))),
    CONSTRAINT status_is_known CHECK ((status = ANY (ARRAY['queued'::text, 'claimed'::text, 'running'::text, 'cancel_requested'::text, 'awaiting_children'::text, 'awaiting_approval'::text, 'succeeded'::text, 'failed'::text, 'lease_expired'::text, 'timed_out'::text, 'dead_letter'::text, 'cancelled'::text])))
);

ALTER TABLE pgflight.step_attempts OWNER TO pgflight_owner;

-- Name: TABLE step_attempts; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.step_attempts IS 'Attempts (tries) of steps. Live statuses: queued, claimed, running, cancel_requested, awaiting_children, awaiting_approval. An attempt ends failed, lease_expired or timed_out (another attempt follows), or succeeded, dead_letter or cancelled (the step is terminal). Claim metadata (worker_id, claimed_at, lease_expires_at, fencing_token) is never cleared. lease_s in seconds.';

-- Name: _lock_held(bigint, bigint, text, boolean); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._lock_held(p_attempt_id bigint, p_token bigint, p_operation text, p_with_cancel_requested boolean DEFAULT false) RETURNS pgflight.step_attempts
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_row pgflight.step_attempts;
begin
  select a.* into v_row from pgflight.step_attempts a
   where a.id = p_attempt_id and a.fencing_token = p_token
     and (a.status in ('claimed', 'running') or (p_with_cancel_requested and a.status = 'cancel_requested'))
     and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
     for update of a;
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, p_operation);
  end if;
  return v_row;
end
$$;

ALTER FUNCTION pgflight._lock_held(p_attempt_id bigint, p_token bigint, p_operation text, p_with_cancel_requested boolean) OWNER TO pgflight_owner;

-- Name: FUNCTION _lock_held(p_attempt_id bigint, p_token bigint, p_operation text, p_with_cancel_requested boolean); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._lock_held(p_attempt_id bigint, p_token bigint, p_operation text, p_with_cancel_requested boolean) IS 'Internal: lock a live attempt held with this token, or raise ZF001 / ZF002 / ZF003.';

-- Name: _may(text, bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select exists (select from pgflight.workspace_grants g
                  where g.login = session_user
                    and (g.lane = p_lane or p_lane = 'reader')
                    and (g.workspace_id is null or g.workspace_id = p_workspace_id))
      or coalesce((select r.rolsuper from pg_catalog.pg_roles r where r.rolname = session_user), false)
$$;

ALTER FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION _may(p_lane text, p_workspace_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) IS 'Internal: may the login (session_user) act in this lane on this workspace (null: on every one)?';

-- Name: _move_budget(bigint[], numeric, numeric, numeric, boolean, timestamp with time zone, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._move_budget(p_ids bigint[], p_reserve numeric, p_spend numeric, p_release numeric, p_check boolean, p_now timestamp with time zone, p_what text) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_b pgflight.budgets;
begin
  if p_ids is null or cardinality(p_ids) = 0 then
    return null;
  end if;
  if p_check then
    for v_b in select b.* from pgflight.budgets b where b.id = any (p_ids) order by b.id for update loop
      if v_b.max_wall_s is not null and p_now > v_b.started_at + make_interval(secs => v_b.max_wall_s) then
        return jsonb_build_object(
          'message', format('budget exceeded: wall time of %s budget %s', v_b.scope, v_b.id),
          'detail',  format('scope=%s budget_id=%s cap=max_wall_s max_wall_s=%s started_at=%s now=%s (%s)',
                            v_b.scope, v_b.id, v_b.max_wall_s, v_b.started_at, p_now, p_what),
          'hint',    'The tree ran past its wall-time cap; raise max_wall_s for the run or agent, or end the work.');
      end if;
      if v_b.limit_usd is not null
         and v_b.spent_usd + v_b.reserved_usd - p_release + p_reserve + p_spend > v_b.limit_usd then
        return jsonb_build_object(
          'message', format('budget exceeded: %s budget %s has %s USD left, the call needs %s USD',
                            v_b.scope, v_b.id,
                            greatest(v_b.limit_usd - v_b.spent_usd - v_b.reserved_usd, 0)::numeric(16, 6),
                            (p_reserve + p_spend)::numeric(16, 6)),
          'detail',  format('scope=%s budget_id=%s cap=usd limit_usd=%s spent_usd=%s reserved_usd=%s needed_usd=%s (%s)',
                            v_b.scope, v_b.id, v_b.limit_usd, v_b.spent_usd, v_b.reserved_usd,
                            p_reserve + p_spend, p_what),
          'hint',    case v_b.scope
                       when 'workspace_day' then 'The workspace reached its daily USD cap (workspaces.daily_usd_cap); wait for the next UTC day or raise the cap.'
                       when 'run' then 'The run reached its USD cap (max_usd); raise it or end the run.'
                       else 'The agent''s tree reached its USD cap (max_usd of the agent); raise it or end the work.' end);
      end if;
    end loop;
  else
    perform 1 from pgflight.budgets b where b.id = any (p_ids) order by b.id for update;
  end if;
  update pgflight.budgets b
     set reserved_usd = greatest(b.reserved_usd + p_reserve - p_release, 0),
         spent_usd = b.spent_usd + p_spend
   where b.id = any (p_ids);
  return null;
end
$$;

ALTER FUNCTION pgflight._move_budget(p_ids bigint[], p_reserve numeric, p_spend numeric, p_release numeric, p_check boolean, p_now timestamp with time zone, p_what text) OWNER TO pgflight_owner;

-- Name: FUNCTION _move_budget(p_ids bigint[], p_reserve numeric, p_spend numeric, p_release numeric, p_check boolean, p_now timestamp with time zone, p_what text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._move_budget(p_ids bigint[], p_reserve numeric, p_spend numeric, p_release numeric, p_check boolean, p_now timestamp with time zone, p_what text) IS 'Internal: reserve / spend / release USD on budgets atomically; with p_check an admission that returns the refusal (nothing moved) instead of moving.';

-- Name: _notify_ready(); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._notify_ready() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pg_catalog.pg_notify('pgflight_ready', '');
end
$$;

ALTER FUNCTION pgflight._notify_ready() OWNER TO pgflight_owner;

-- Name: FUNCTION _notify_ready(); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._notify_ready() IS 'Internal: NOTIFY pgflight_ready with an empty payload.';

-- Name: _opt_num(jsonb, text, double precision); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._opt_num(p_options jsonb, p_key text, p_default double precision) RETURNS double precision
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_options is null or p_options -> p_key is null or jsonb_typeof(p_options -> p_key) = 'null' then
    return p_default;
  end if;
  if jsonb_typeof(p_options -> p_key) <> 'number' then
    raise exception using
      errcode = '22023',
      message = format('option %s must be a number', p_key),
      detail  = format('got %s', p_options -> p_key),
      hint    = 'Pass the option as a JSON number, e.g. {"' || p_key || '": 5}.';
  end if;
  return (p_options ->> p_key)::double precision;
end
$$;

ALTER FUNCTION pgflight._opt_num(p_options jsonb, p_key text, p_default double precision) OWNER TO pgflight_owner;

-- Name: FUNCTION _opt_num(p_options jsonb, p_key text, p_default double precision); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._opt_num(p_options jsonb, p_key text, p_default double precision) IS 'Internal: a numeric option or its default; 22023 when the value is not a JSON number.';

-- Name: _opt_text(jsonb, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._opt_text(p_options jsonb, p_key text, p_default text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_options is null or p_options -> p_key is null or jsonb_typeof(p_options -> p_key) = 'null' then
    return p_default;
  end if;
  if jsonb_typeof(p_options -> p_key) <> 'string' then
    raise exception using
      errcode = '22023',
      message = format('option %s must be a string', p_key),
      detail  = format('got %s', p_options -> p_key),
      hint    = 'Pass the option as a JSON string.';
  end if;
  return p_options ->> p_key;
end
$$;

ALTER FUNCTION pgflight._opt_text(p_options jsonb, p_key text, p_default text) OWNER TO pgflight_owner;

-- Name: FUNCTION _opt_text(p_options jsonb, p_key text, p_default text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._opt_text(p_options jsonb, p_key text, p_default text) IS 'Internal: a string option or its default; 22023 when the value is not a JSON string.';

-- Name: _price_usd(text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._price_usd(p_model text, p_usage jsonb) RETURNS numeric
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_p pgflight.model_prices;
begin
  select p.* into v_p from pgflight.model_prices p
   where left(p_model, length(p.model)) = p.model
   order by length(p.model) desc limit 1;
  if not found then
    raise exception using
      errcode = '22023',
      message = format('no price for model %L', p_model),
      hint    = 'Add the model (or a prefix of its name) to pgflight.model_prices.';
  end if;
  return (coalesce((p_usage ->> 'input_tokens')::numeric, 0) * v_p.input_usd_per_mtok
        + coalesce((p_usage ->> 'output_tokens')::numeric, 0) * v_p.output_usd_per_mtok
        + coalesce((p_usage ->> 'cache_creation_input_tokens')::numeric, 0) * v_p.cache_write_usd_per_mtok
        + coalesce((p_usage ->> 'cache_read_input_tokens')::numeric, 0) * v_p.cache_read_usd_per_mtok) / 1000000;
end
$$;

ALTER FUNCTION pgflight._price_usd(p_model text, p_usage jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION _price_usd(p_model text, p_usage jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._price_usd(p_model text, p_usage jsonb) IS 'Internal: USD of a call from its usage and pgflight.model_prices (longest prefix). 22023 unknown model.';

-- Name: _raise_budget_exceeded(jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._raise_budget_exceeded(p_refusal jsonb) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  raise exception using
    errcode = 'ZF007',
    message = p_refusal ->> 'message',
    detail  = coalesce(p_refusal ->> 'detail', ''),
    hint    = coalesce(p_refusal ->> 'hint', '');
end
$$;

ALTER FUNCTION pgflight._raise_budget_exceeded(p_refusal jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION _raise_budget_exceeded(p_refusal jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._raise_budget_exceeded(p_refusal jsonb) IS 'Internal: raise ZF007 with a refusal''s message, detail and hint.';

-- Name: _reclaim(timestamp with time zone, integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._reclaim(p_now timestamp with time zone, p_limit integer) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

ALTER FUNCTION pgflight._reclaim(p_now timestamp with time zone, p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION _reclaim(p_now timestamp with time zone, p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._reclaim(p_now timestamp with time zone, p_limit integer) IS 'Internal: reclaim at most p_limit attempts whose lease lapsed or whose deadline passed.';

-- Name: _record_stale(bigint, bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._record_stale(p_attempt_id bigint, p_token bigint, p_operation text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_att record;
begin
  select a.id, a.run_id, a.step_id, a.status, a.fencing_token, a.worker_id, w.login into v_att
    from pgflight.step_attempts a left join pgflight.workers w on w.id = a.worker_id
   where a.id = p_attempt_id;
  if not found or (v_att.fencing_token is not distinct from p_token and v_att.status in ('claimed', 'running'))
     or v_att.login is distinct from session_user
     or (select count(*) from pgflight.events e
          where e.run_id = v_att.run_id and e.attempt_id = v_att.id and e.reason = 'stale_result_rejected')
        >= (select s.max_stale_writes_per_attempt from pgflight.settings s) then
    return false;
  end if;
  perform pgflight._event(v_att.run_id, v_att.step_id, v_att.id, v_att.status, v_att.status, null,
                          'stale_result_rejected', null,
                          jsonb_build_object('operation', p_operation, 'caller_token', p_token));
  return true;
end
$$;

ALTER FUNCTION pgflight._record_stale(p_attempt_id bigint, p_token bigint, p_operation text) OWNER TO pgflight_owner;

-- Name: FUNCTION _record_stale(p_attempt_id bigint, p_token bigint, p_operation text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._record_stale(p_attempt_id bigint, p_token bigint, p_operation text) IS 'Internal: log a refused write as stale_result_rejected; false when the token is still current.';

-- Name: _reject_write(bigint, bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._reject_write(p_attempt_id bigint, p_token bigint, p_operation text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_status text;
  v_token bigint;
  v_login name;
begin
  select a.status, a.fencing_token, w.login into v_status, v_token, v_login
    from pgflight.step_attempts a left join pgflight.workers w on w.id = a.worker_id
   where a.id = p_attempt_id;
  if not found then
    raise exception using
      errcode = 'ZF003',
      message = format('unknown attempt %s', p_attempt_id),
      hint    = 'Use the attempt_id returned by claim_batch.';
  elsif v_token is not distinct from p_token and v_login is distinct from session_user then
    perform pgflight._require_own_attempt(p_attempt_id, p_token, p_operation);
  elsif v_status in ('cancel_requested', 'cancelled') and v_token is not distinct from p_token then
    raise exception using
      errcode = 'ZF002',
      message = format('%s rejected: attempt %s was cancelled', p_operation, p_attempt_id),
      detail  = format('attempt status %s', v_status),
      hint    = 'The run or step was cancelled; stop the work and call release_step to acknowledge.';
  else
    raise exception using
      errcode = 'ZF001',
      message = format('lease lost on attempt %s', p_attempt_id),
      detail  = format('%s refused: the attempt is not held with caller token %s%s', p_operation,
                       coalesce(p_token::text, 'none'),
                       case when v_login = session_user then format(' (attempt status %s)', v_status) else '' end),
      hint    = 'The step was reclaimed or finished; abandon this attempt and write nothing.';
  end if;
end
$$;

ALTER FUNCTION pgflight._reject_write(p_attempt_id bigint, p_token bigint, p_operation text) OWNER TO pgflight_owner;

-- Name: FUNCTION _reject_write(p_attempt_id bigint, p_token bigint, p_operation text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._reject_write(p_attempt_id bigint, p_token bigint, p_operation text) IS 'Internal: raises ZF001 (lease lost), ZF002 (cancelled) or ZF003 (unknown attempt).';

-- Name: _release_reservation(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._release_reservation(p_agent_run_id bigint) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_run pgflight.agent_runs;
begin
  select r.* into v_run from pgflight.agent_runs r where r.id = p_agent_run_id;
  if v_run.reserved_attempt_id is null then
    return;
  end if;
  perform pgflight._move_budget(v_run.reserved_budget_ids, 0, 0, v_run.reserved_usd, false, null, 'release');
  update pgflight.agent_runs
     set reserved_usd = 0, reserved_attempt_id = null, reserved_iteration = null, reserved_budget_ids = null
   where id = p_agent_run_id;
end
$$;

ALTER FUNCTION pgflight._release_reservation(p_agent_run_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION _release_reservation(p_agent_run_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._release_reservation(p_agent_run_id bigint) IS 'Internal: release an agent run''s USD reservation.';

-- Name: _reopen_step(bigint, text, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._reopen_step(p_step_id bigint, p_actor text, p_reason text, p_note text) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

ALTER FUNCTION pgflight._reopen_step(p_step_id bigint, p_actor text, p_reason text, p_note text) OWNER TO pgflight_owner;

-- Name: FUNCTION _reopen_step(p_step_id bigint, p_actor text, p_reason text, p_note text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._reopen_step(p_step_id bigint, p_actor text, p_reason text, p_note text) IS 'Internal: new attempt for a terminal step, ancestors reopened to receive its result.';

-- Name: _require_cap(text, double precision, double precision, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._require_cap(p_cap text, p_limit double precision, p_value double precision, p_what text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_value > p_limit then
    raise exception using
      errcode = 'ZF005',
      message = format('%s over the cap settings.%s', p_what, p_cap),
      detail  = format('%s is %s; settings.%s is %s', p_what, p_value, p_cap, p_limit),
      hint    = format('Send less (store a large payload elsewhere and pass a reference), or raise the cap: '
                       'UPDATE pgflight.settings SET %s = ...', p_cap);
  end if;
end
$$;

ALTER FUNCTION pgflight._require_cap(p_cap text, p_limit double precision, p_value double precision, p_what text) OWNER TO pgflight_owner;

-- Name: FUNCTION _require_cap(p_cap text, p_limit double precision, p_value double precision, p_what text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._require_cap(p_cap text, p_limit double precision, p_value double precision, p_what text) IS 'Internal: raise ZF005 naming settings.p_cap when p_value is over it.';

-- Name: _require_lane(text, bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._require_lane(p_lane text, p_workspace_id bigint, p_operation text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if not pgflight._may(p_lane, p_workspace_id) then
    raise exception using
      errcode = 'ZF012',
      message = format('%s refused: login %s may not act as %s on %s', p_operation, session_user, p_lane,
                       coalesce('workspace ' || p_workspace_id, 'every workspace')),
      detail  = format('no %s grant for login %s on %s in pgflight.workspace_grants', p_lane, session_user,
                       coalesce('workspace ' || p_workspace_id, 'every workspace (this call acts on all of them)')),
      hint    = format('The owner grants it: select pgflight.grant_workspace(%L, <workspace name, or null for all>, %L);',
                       session_user, p_lane);
  end if;
end
$$;

ALTER FUNCTION pgflight._require_lane(p_lane text, p_workspace_id bigint, p_operation text) OWNER TO pgflight_owner;

-- Name: FUNCTION _require_lane(p_lane text, p_workspace_id bigint, p_operation text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._require_lane(p_lane text, p_workspace_id bigint, p_operation text) IS 'Internal: raise ZF012 unless the login may act in this lane on this workspace (null: every one).';

-- Name: _require_lane_on_run(text, bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._require_lane_on_run(p_lane text, p_run_id bigint, p_operation text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint;
begin
  select r.workspace_id into v_ws from pgflight.runs r where r.id = p_run_id;
  if found then
    perform pgflight._require_lane(p_lane, v_ws, p_operation);
  end if;
end
$$;

ALTER FUNCTION pgflight._require_lane_on_run(p_lane text, p_run_id bigint, p_operation text) OWNER TO pgflight_owner;

-- Name: FUNCTION _require_lane_on_run(p_lane text, p_run_id bigint, p_operation text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._require_lane_on_run(p_lane text, p_run_id bigint, p_operation text) IS 'Internal: ZF012 unless the login has the lane on the run''s workspace; an unknown run passes.';

-- Name: _require_lane_on_step(text, bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._require_lane_on_step(p_lane text, p_step_id bigint, p_operation text) RETURNS void
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select pgflight._require_lane_on_run(p_lane, (select s.run_id from pgflight.steps s where s.id = p_step_id),
                                       p_operation)
$$;

ALTER FUNCTION pgflight._require_lane_on_step(p_lane text, p_step_id bigint, p_operation text) OWNER TO pgflight_owner;

-- Name: FUNCTION _require_lane_on_step(p_lane text, p_step_id bigint, p_operation text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._require_lane_on_step(p_lane text, p_step_id bigint, p_operation text) IS 'Internal: ZF012 unless the login has the lane on the step''s workspace; an unknown step passes.';

-- Name: _require_own_attempt(bigint, bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._require_own_attempt(p_attempt_id bigint, p_token bigint, p_operation text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if exists (select from pgflight.step_attempts a join pgflight.workers w on w.id = a.worker_id
              where a.id = p_attempt_id and a.fencing_token = p_token and w.login <> session_user) then
    raise exception using
      errcode = 'ZF012',
      message = format('%s refused: attempt %s is not held by a worker of login %s', p_operation, p_attempt_id,
                       session_user),
      detail  = 'An attempt may be written only by the login whose worker claimed it, whatever token is sent.',
      hint    = 'Write only attempts that your own claim_batch returned.';
  end if;
end
$$;

ALTER FUNCTION pgflight._require_own_attempt(p_attempt_id bigint, p_token bigint, p_operation text) OWNER TO pgflight_owner;

-- Name: FUNCTION _require_own_attempt(p_attempt_id bigint, p_token bigint, p_operation text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._require_own_attempt(p_attempt_id bigint, p_token bigint, p_operation text) IS 'Internal: raise ZF012 when the attempt is held with this token by another login''s worker.';

-- Name: _require_positive(text, double precision); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._require_positive(p_name text, p_value double precision) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_value is null or p_value <= 0 or p_value = 'NaN'::double precision or p_value = 'Infinity'::double precision then
    raise exception using
      errcode = '22023',
      message = format('%s must be a positive number', p_name),
      detail  = format('got %s', coalesce(p_value::text, 'NULL')),
      hint    = format('Pass a finite %s greater than zero.', p_name);
  end if;
end
$$;

ALTER FUNCTION pgflight._require_positive(p_name text, p_value double precision) OWNER TO pgflight_owner;

-- Name: FUNCTION _require_positive(p_name text, p_value double precision); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._require_positive(p_name text, p_value double precision) IS 'Internal: 22023 unless the value is a finite number above zero.';

-- Name: _reserve(pgflight.agent_runs, bigint, integer, numeric, timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._reserve(p_run pgflight.agent_runs, p_attempt_id bigint, p_iteration integer, p_est_usd numeric, p_now timestamp with time zone) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ids bigint[];
  v_refusal jsonb;
begin
  if p_run.reserved_attempt_id = p_attempt_id and p_run.reserved_iteration = p_iteration then
    return null;
  end if;
  if p_run.reserved_attempt_id is not null then
    perform pgflight._move_budget(p_run.reserved_budget_ids, 0, 0, p_run.reserved_usd, false, p_now, 'release');
  end if;
  v_refusal := pgflight._iteration_refusal(p_run, p_iteration);
  if v_refusal is null then
    v_ids := pgflight._call_budget_ids(p_run, p_now);
    v_refusal := pgflight._move_budget(v_ids, p_est_usd, 0, 0, true, p_now,
                                       format('agent_run=%s iteration=%s', p_run.id, p_iteration));
  end if;
  if v_refusal is null then
    update pgflight.agent_runs
       set reserved_usd = p_est_usd, reserved_attempt_id = p_attempt_id, reserved_iteration = p_iteration,
           reserved_budget_ids = v_ids, updated_at = p_now
     where id = p_run.id;
  elsif p_run.reserved_attempt_id is not null then
    update pgflight.agent_runs
       set reserved_usd = 0, reserved_attempt_id = null, reserved_iteration = null, reserved_budget_ids = null,
           updated_at = p_now
     where id = p_run.id;
  end if;
  return v_refusal;
end
$$;

ALTER FUNCTION pgflight._reserve(p_run pgflight.agent_runs, p_attempt_id bigint, p_iteration integer, p_est_usd numeric, p_now timestamp with time zone) OWNER TO pgflight_owner;

-- Name: FUNCTION _reserve(p_run pgflight.agent_runs, p_attempt_id bigint, p_iteration integer, p_est_usd numeric, p_now timestamp with time zone); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._reserve(p_run pgflight.agent_runs, p_attempt_id bigint, p_iteration integer, p_est_usd numeric, p_now timestamp with time zone) IS 'Internal: admission of a model call (caps checked, est USD reserved); returns null or the refusal.';

-- Name: _step_finished(bigint, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._step_finished(p_step_id bigint, p_final text, p_actor text DEFAULT NULL::text) RETURNS void
    LANGUAGE sql
    SET search_path TO ''
    AS $$ select pgflight._steps_finished(array[p_step_id], array[p_final], p_actor, pgflight._now()) $$;

ALTER FUNCTION pgflight._step_finished(p_step_id bigint, p_final text, p_actor text) OWNER TO pgflight_owner;

-- Name: FUNCTION _step_finished(p_step_id bigint, p_final text, p_actor text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._step_finished(p_step_id bigint, p_final text, p_actor text) IS 'Internal: _steps_finished for one step ending now.';

-- Name: _steps_finished(bigint[], text[], text, timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._steps_finished(p_step_ids bigint[], p_finals text[], p_actor text, p_now timestamp with time zone) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

ALTER FUNCTION pgflight._steps_finished(p_step_ids bigint[], p_finals text[], p_actor text, p_now timestamp with time zone) OWNER TO pgflight_owner;

-- Name: FUNCTION _steps_finished(p_step_ids bigint[], p_finals text[], p_actor text, p_now timestamp with time zone); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._steps_finished(p_step_ids bigint[], p_finals text[], p_actor text, p_now timestamp with time zone) IS 'Internal: hook of every terminal step transition, set-based: cancels what an unsuccessful step left below it, pokes parents (fail-fast or wake), ends a root''s run.';

-- Name: _store_tool_results(bigint, bigint, jsonb, timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._store_tool_results(p_run_id bigint, p_attempt_id bigint, p_results jsonb, p_now timestamp with time zone) RETURNS text[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_missing text;
  v_stored text[];
begin
  if p_results is null or jsonb_typeof(p_results) <> 'array'
     or exists (select from jsonb_array_elements(p_results) e(v)
                 where jsonb_typeof(e.v) <> 'object' or e.v ->> 'type' is distinct from 'tool_result'
                    or e.v ->> 'tool_use_id' is null) then
    raise exception using errcode = '22023', message = 'results must be tool_result blocks',
      hint = '[{"type": "tool_result", "tool_use_id": "...", "content": "..."}, ...]';
  end if;
  with r as (
    select distinct on (e.v ->> 'tool_use_id') e.v ->> 'tool_use_id' as tid, e.v as result
      from jsonb_array_elements(p_results) with ordinality e(v, ord)
     order by e.v ->> 'tool_use_id', e.ord
  ), j as (
    select r.tid, r.result, u.iteration, u.seq, u.tool_name
      from r left join pgflight.traces u
        on u.agent_run_id = p_run_id and u.tool_use_id = r.tid and u.block_type = 'tool_use'
  ), up as (
    insert into pgflight.traces as t (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name,
                                      content, status, tokens, attempt_id, created_at, updated_at)
    select p_run_id, j.iteration, 1000 + j.seq, 'user', 'tool_result', j.tid, j.tool_name, j.result, 'completed',
           ceil(length(j.result::text) / 4.0)::integer, p_attempt_id, p_now, p_now
      from j where j.seq is not null
    on conflict on constraint block_is_unique do update
      set content = excluded.content, status = 'completed', tokens = excluded.tokens,
          attempt_id = excluded.attempt_id, updated_at = excluded.updated_at
      where t.status <> 'completed'
    returning t.tool_use_id
  )
  select (select min(j.tid) from j where j.seq is null), (select coalesce(array_agg(up.tool_use_id), '{}') from up)
    into v_missing, v_stored;
  if v_missing is not null then
    raise exception using errcode = 'ZF003',
      message = format('no tool_use %L in agent run %s', v_missing, p_run_id),
      hint = 'Record the model call (record_model_call) before completing its tool calls.';
  end if;
  return v_stored;
end
$$;

ALTER FUNCTION pgflight._store_tool_results(p_run_id bigint, p_attempt_id bigint, p_results jsonb, p_now timestamp with time zone) OWNER TO pgflight_owner;

-- Name: FUNCTION _store_tool_results(p_run_id bigint, p_attempt_id bigint, p_results jsonb, p_now timestamp with time zone); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._store_tool_results(p_run_id bigint, p_attempt_id bigint, p_results jsonb, p_now timestamp with time zone) IS 'Internal: store tool_result blocks set-based (first result wins); returns the ids stored. 22023, ZF003.';

-- Name: _tree_steps(bigint, bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._tree_steps(p_run_id bigint, p_step_id bigint) RETURNS bigint[]
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case when p_step_id is null
    then (select array_agg(s.id) from pgflight.steps s where s.run_id = p_run_id)
    else (with recursive sub as (
            select p_step_id as id
            union all
            select c.id from pgflight.steps c join sub on c.parent_id = sub.id
          ) select array_agg(sub.id) from sub)
  end
$$;

ALTER FUNCTION pgflight._tree_steps(p_run_id bigint, p_step_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION _tree_steps(p_run_id bigint, p_step_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._tree_steps(p_run_id bigint, p_step_id bigint) IS 'Internal: ids of a run''s steps, or of a step and its descendants.';

-- Name: _wake(bigint, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._wake(p_step_id bigint, p_reason text, p_actor text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

ALTER FUNCTION pgflight._wake(p_step_id bigint, p_reason text, p_actor text) OWNER TO pgflight_owner;

-- Name: FUNCTION _wake(p_step_id bigint, p_reason text, p_actor text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._wake(p_step_id bigint, p_reason text, p_actor text) IS 'Internal: awaiting_children -> queued for the step''s live attempt, once; true when it moved.';

-- Name: agent_run_of(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.agent_run_of(p_step_id bigint) RETURNS TABLE(agent_run_id bigint, step_id bigint, run_id bigint, model text, system_prompt text, max_iterations integer, max_tool_calls integer, iterations integer, tool_calls integer, input_tokens bigint, output_tokens bigint, cache_creation_tokens bigint, cache_read_tokens bigint, usd numeric, step_status text, result jsonb, created_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_lane_on_step('reader', p_step_id, 'agent_run_of');  -- issue 13: tenants
  return query
    select r.id, r.step_id, r.run_id, r.model, r.system_prompt, r.max_iterations, r.max_tool_calls, r.iterations,
           r.tool_calls, r.input_tokens, r.output_tokens, r.cache_creation_tokens, r.cache_read_tokens, r.usd,
           a.status, a.result, r.created_at
      from pgflight.agent_runs r
      join pgflight.steps s on s.id = r.step_id
      join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
     where r.step_id = p_step_id;
end
$$;

ALTER FUNCTION pgflight.agent_run_of(p_step_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION agent_run_of(p_step_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.agent_run_of(p_step_id bigint) IS 'Read: the agent run of a step, with totals and step status.';

-- Name: agent_runs_by_status(text, bigint, integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.agent_runs_by_status(p_status text DEFAULT 'succeeded'::text, p_after bigint DEFAULT 0, p_limit integer DEFAULT 1000) RETURNS TABLE(agent_run_id bigint, step_id bigint, run_id bigint, model text, system_prompt text, iterations integer, usd numeric, result jsonb)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select r.id, r.step_id, r.run_id, r.model, r.system_prompt, r.iterations, r.usd, a.result
    from pgflight.agent_runs r
    join pgflight.steps s on s.id = r.step_id
    join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
   cross join (select pgflight._lane_workspaces('reader') as ids) ws  -- issue 13: the login's workspaces
   where a.status = p_status and r.id > p_after
     and (ws.ids is null or exists (select from pgflight.runs x where x.id = r.run_id and x.workspace_id = any (ws.ids)))
   order by r.id
   limit p_limit
$$;

ALTER FUNCTION pgflight.agent_runs_by_status(p_status text, p_after bigint, p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION agent_runs_by_status(p_status text, p_after bigint, p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.agent_runs_by_status(p_status text, p_after bigint, p_limit integer) IS 'Read: agent runs whose step status is p_status, keyset-paged by agent run id.';

-- Name: agent_transcript(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.agent_transcript(p_agent_run_id bigint) RETURNS TABLE(iteration integer, seq integer, role text, block_type text, tool_use_id text, tool_name text, content jsonb, status text, tokens integer, attempt_id bigint, created_at timestamp with time zone, model text, input_tokens bigint, output_tokens bigint, cache_creation_tokens bigint, cache_read_tokens bigint, usd numeric, stop_reason text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_lane_on_run('reader', (select r.run_id from pgflight.agent_runs r where r.id = p_agent_run_id),
                                       'agent_transcript');  -- issue 13: tenants
  return query
    select t.iteration, t.seq, t.role, t.block_type, t.tool_use_id, t.tool_name, t.content, t.status, t.tokens,
           t.attempt_id, t.created_at, c.model, c.input_tokens, c.output_tokens, c.cache_creation_tokens,
           c.cache_read_tokens, c.usd, c.stop_reason
      from pgflight.traces t
      left join pgflight.costs c on c.agent_run_id = t.agent_run_id and c.iteration = t.iteration
     where t.agent_run_id = p_agent_run_id
     order by t.iteration, t.seq;
end
$$;

ALTER FUNCTION pgflight.agent_transcript(p_agent_run_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION agent_transcript(p_agent_run_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.agent_transcript(p_agent_run_id bigint) IS 'Read: an agent run''s trace rows in order, with per-call costs.';

-- Name: approve(bigint, text, text, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.approve(p_step_id bigint, p_decision text, p_actor text, p_note text DEFAULT NULL::text, p_gate_key text DEFAULT NULL::text) RETURNS TABLE(step_id bigint, gate_key text, decision text, applied boolean)
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
  perform pgflight._require_lane_on_step('operator', p_step_id, 'approve');  -- issue 13: tenants
  if not exists (select from pgflight.steps s where s.id = p_step_id) then
    raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
  end if;
  if v_key is null then
    select g.gate_key into v_key from pgflight.approvals g
     where g.step_id = p_step_id order by g.decision is null desc, g.id desc limit 1;
    v_key := coalesce(v_key, 'approval');
  end if;
  insert into pgflight.approvals (step_id, gate_key) values (p_step_id, v_key)
  on conflict on constraint gate_key_is_unique_per_step do nothing;
  select g.* into v_gate from pgflight.approvals g where g.step_id = p_step_id and g.gate_key = v_key for update;
  if v_gate.decision is not null then
    if v_gate.decision = p_decision then
      return query select p_step_id, v_key, v_gate.decision, false;
      return;
    end if;
    raise exception using errcode = 'ZF008', message = format('gate %L of step %s is already decided', v_key, p_step_id),
      detail = format('decided %s by %s at %s', v_gate.decision, v_gate.actor, v_gate.decided_at),
      hint = 'The first decision wins; it cannot be changed.';
  end if;
  perform pgflight._decide(v_gate.id, p_decision, session_user::text, pgflight._actor_note(p_note, p_actor), 'approval_decided');
  return query select p_step_id, v_key, p_decision, true;
end
$$;

ALTER FUNCTION pgflight.approve(p_step_id bigint, p_decision text, p_actor text, p_note text, p_gate_key text) OWNER TO pgflight_owner;

-- Name: FUNCTION approve(p_step_id bigint, p_decision text, p_actor text, p_note text, p_gate_key text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.approve(p_step_id bigint, p_decision text, p_actor text, p_note text, p_gate_key text) IS 'Decide an approval gate (approve | reject); first decision wins. Errors: 22023, ZF003, ZF008.';

-- Name: begin_agent_run(bigint, bigint, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.begin_agent_run(p_attempt_id bigint, p_token bigint, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(agent_run_id bigint, created boolean, iterations integer, tool_calls integer, usd numeric, max_iterations integer, max_tool_calls integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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
  select a.step_id, a.run_id into v_att from pgflight.step_attempts a
   where a.id = p_attempt_id and a.fencing_token = p_token and a.status in ('claimed', 'running')
     -- issue 13: only the login whose worker holds the attempt (else ZF012 from _reject_write)
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

ALTER FUNCTION pgflight.begin_agent_run(p_attempt_id bigint, p_token bigint, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION begin_agent_run(p_attempt_id bigint, p_token bigint, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.begin_agent_run(p_attempt_id bigint, p_token bigint, p_options jsonb) IS 'Start or resume the agent of a held step; returns (agent_run_id, created, totals, caps). Errors: ZF001, ZF002, ZF003, 22023.';

-- Name: cancel_run(bigint, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.cancel_run(p_run_id bigint, p_actor text DEFAULT NULL::text, p_reason text DEFAULT NULL::text) RETURNS TABLE(run_id bigint, was_running boolean, cancelled integer, cancel_requested integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_status text;
  v_c integer;
  v_r integer;
begin
  perform pgflight._require_lane_on_run('operator', p_run_id, 'cancel_run');  -- issue 13: tenants
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

ALTER FUNCTION pgflight.cancel_run(p_run_id bigint, p_actor text, p_reason text) OWNER TO pgflight_owner;

-- Name: FUNCTION cancel_run(p_run_id bigint, p_actor text, p_reason text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.cancel_run(p_run_id bigint, p_actor text, p_reason text) IS 'Cancel a run and every live attempt in it. Returns counts. Errors: ZF003 unknown run.';

-- Name: cancel_step(bigint, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.cancel_step(p_step_id bigint, p_actor text DEFAULT NULL::text, p_reason text DEFAULT NULL::text) RETURNS TABLE(step_id bigint, cancelled integer, cancel_requested integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_step record;
  v_c integer;
  v_r integer;
  v_root_status text;
begin
  perform pgflight._require_lane_on_step('operator', p_step_id, 'cancel_step');  -- issue 13: tenants
  select s.id, s.run_id, s.parent_id into v_step from pgflight.steps s where s.id = p_step_id;
  if not found then
    raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
  end if;
  if v_step.parent_id is null then
    return query select p_step_id, c.cancelled, c.cancel_requested
      from pgflight.cancel_run(v_step.run_id, p_actor, p_reason) c;
    return;
  end if;
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

ALTER FUNCTION pgflight.cancel_step(p_step_id bigint, p_actor text, p_reason text) OWNER TO pgflight_owner;

-- Name: FUNCTION cancel_step(p_step_id bigint, p_actor text, p_reason text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.cancel_step(p_step_id bigint, p_actor text, p_reason text) IS 'Cancel a step and its subtree; pokes its parent. Errors: ZF003 unknown step.';

-- Name: children_results(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.children_results(p_step_id bigint) RETURNS TABLE(step_key text, step_id bigint, recipe text, status text, attempt_no integer, result jsonb, error jsonb)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_lane_on_step('reader', p_step_id, 'children_results');  -- issue 13: tenants
  return query
    select s.step_key, s.id, s.recipe, a.status, a.attempt_no, a.result, a.error
      from pgflight.steps s
      join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
     where s.parent_id = p_step_id
     order by s.step_key;
end
$$;

ALTER FUNCTION pgflight.children_results(p_step_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION children_results(p_step_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.children_results(p_step_id bigint) IS 'Children of a step in key order with status, result and error of their latest attempt.';

-- Name: claim_batch(bigint, integer, double precision, text[], jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.claim_batch(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[] DEFAULT NULL::text[], p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint, step_key text, attempt_no integer, recipe text, input jsonb, lease_expires_at timestamp with time zone, deadline_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_sort TO 'off'
    SET jit TO 'off'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_reclaim integer;
  v_start boolean := coalesce((p_options ->> 'start')::boolean, false);
  v_settings pgflight.settings;
  v_ws bigint[];
begin
  perform pgflight._require_positive('batch_size', p_batch_size);
  perform pgflight._require_positive('lease_s', p_lease_s);
  -- Issue 13: caps on the batch and the lease (claim_batch(2^31-1, 1e9) took every ready step
  -- until 2058), and the workspaces this login may work in: null (every workspace: the
  -- single-tenant case) leaves the claim query as it was; otherwise each candidate row costs one
  -- probe of runs by primary key.
  select * into v_settings from pgflight.settings;
  perform pgflight._require_cap('max_batch_size', v_settings.max_batch_size, p_batch_size, 'batch_size');
  perform pgflight._require_cap('max_lease_s', v_settings.max_lease_s, p_lease_s, 'lease_s (seconds)');
  v_ws := pgflight._lane_workspaces('worker');
  -- the worker must be live and registered by this login (issue 13); another login's id is unknown here
  update pgflight.workers set last_seen_at = v_now
   where id = p_worker_id and stopped_at is null and login = session_user;
  if not found then
    raise exception using errcode = 'ZF010', message = format('unknown or stopped worker %s', p_worker_id),
      detail = format('no live worker %s registered by login %s', p_worker_id, session_user),
      hint = 'Call register_worker first and use the id it returns.';
  end if;
  v_reclaim := v_settings.reclaim_in_claim;
  if v_reclaim > 0 then
    perform pgflight._reclaim(v_now, v_reclaim);
  end if;

  return query
  with ready as (
    -- only queued rows that are due, in claim order; rows another claimer holds are skipped
    select a.id
      from pgflight.step_attempts a
     where a.status = 'queued' and a.available_after <= v_now
       and (p_recipes is null or a.recipe = any (p_recipes))
       and (v_ws is null or exists (select from pgflight.runs r where r.id = a.run_id and r.workspace_id = any (v_ws)))
     order by a.priority desc, a.available_after, a.id
     limit p_batch_size
       for update skip locked
  ), claimed as (
    update pgflight.step_attempts a
       set status = case when v_start then 'running' else 'claimed' end, worker_id = p_worker_id,
           fencing_token = nextval('pgflight.fencing_tokens'),
           claimed_at = v_now,
           started_at = case when v_start then v_now end,
           lease_s = coalesce(s.lease_s, p_lease_s),
           lease_expires_at = v_now + make_interval(secs => coalesce(s.lease_s, p_lease_s)),
           deadline_at = v_now + make_interval(secs => s.max_runtime_s)
      from ready r, pgflight.steps s
     where a.id = r.id and s.id = a.step_id
    returning a.id, a.fencing_token, a.step_id, a.run_id, s.parent_id, s.step_key, a.attempt_no,
              a.recipe, s.input, a.lease_expires_at, a.deadline_at, a.priority, a.status
  ), logged as (
    -- the events row of every claim, in the same statement
    insert into pgflight.events (at, run_id, step_id, attempt_id, from_status, to_status, worker_id, reason)
    select v_now, c.run_id, c.step_id, c.id, 'queued', c.status, p_worker_id, 'claimed' from claimed c
  )
  select c.id, c.fencing_token, c.step_id, c.run_id, c.parent_id, c.step_key, c.attempt_no, c.recipe,
         c.input, c.lease_expires_at, c.deadline_at
    from claimed c
   order by c.priority desc, c.id;
end
$$;

ALTER FUNCTION pgflight.claim_batch(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION claim_batch(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.claim_batch(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_options jsonb) IS 'Lease up to p_batch_size ready attempts (lease in seconds). Returns at most p_batch_size rows, each with its fencing token, from the login''s workspaces. Errors: 22023, ZF005, ZF010 unknown worker.';

-- Name: complete_batch(bigint[], bigint[], jsonb[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]) RETURNS TABLE(attempt_id bigint, outcome text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_i integer := 0;
begin
  if coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_tokens), 0)
     or coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_results), 0) then
    raise exception using errcode = '22023', message = 'attempt ids, tokens and results differ in length',
      hint = 'Pass one token and one result per attempt id, in the same order.';
  end if;
  -- issue 13: the largest result is capped (ZF005, nothing written)
  perform pgflight._require_cap('max_result_bytes', (select s.max_result_bytes from pgflight.settings s),
                                (select max(octet_length(r::text)) from unnest(p_results) r), 'result (bytes)');
  -- outcomes come back in the order given, so the i-th row goes with the i-th token
  for attempt_id, outcome in
    select c.attempt_id, c.outcome from pgflight._complete_many(p_attempt_ids, p_tokens, p_results, pgflight._now()) c
  loop
    v_i := v_i + 1;
    if outcome <> 'succeeded' then
      -- a current token of another login's attempt is a leaked one: ZF012, the whole batch undone
      perform pgflight._require_own_attempt(attempt_id, p_tokens[v_i], 'complete_batch');
      perform pgflight._record_stale(attempt_id, p_tokens[v_i], 'complete');
    end if;
    return next;
  end loop;
end
$$;

ALTER FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]) OWNER TO pgflight_owner;

-- Name: FUNCTION complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]) IS 'Complete many held attempts; per row outcome succeeded | lease_lost | cancelled. Errors: 22023.';

-- Name: complete_step(bigint, bigint, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb DEFAULT NULL::jsonb) RETURNS TABLE(attempt_id bigint, status text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- issue 13: the result is capped (ZF005, nothing written)
  perform pgflight._require_cap('max_result_bytes', (select s.max_result_bytes from pgflight.settings s),
                                octet_length(p_result::text), 'result (bytes)');
  if (select c.outcome from pgflight._complete_many(array[p_attempt_id], array[p_token], array[p_result],
                                                     pgflight._now()) c) <> 'succeeded' then
    perform pgflight._reject_write(p_attempt_id, p_token, 'complete_step');
  end if;
  return query select p_attempt_id, 'succeeded'::text;
end
$$;

ALTER FUNCTION pgflight.complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb) IS 'Complete a held attempt with a result. Errors: ZF001 lease lost, ZF002 cancelled, ZF003 unknown.';

-- Name: complete_tool_call(bigint, bigint, bigint, text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.complete_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text, p_result jsonb) RETURNS TABLE(trace_id bigint, completed boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_run pgflight.agent_runs;
  v_stored text[];
begin
  if p_result is null or jsonb_typeof(p_result) <> 'object' or p_result ->> 'type' is distinct from 'tool_result' then
    raise exception using errcode = '22023', message = 'result must be a tool_result block',
      hint = '{"type": "tool_result", "tool_use_id": "...", "content": "..."}';
  end if;
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'complete_tool_call');
  v_stored := pgflight._store_tool_results(v_run.id, p_attempt_id,
                jsonb_build_array(p_result || jsonb_build_object('tool_use_id', p_tool_use_id)), pgflight._now());
  return query select t.id, cardinality(v_stored) > 0 from pgflight.traces t
    where t.agent_run_id = v_run.id and t.tool_use_id = p_tool_use_id and t.block_type = 'tool_result';
end
$$;

ALTER FUNCTION pgflight.complete_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text, p_result jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION complete_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text, p_result jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.complete_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text, p_result jsonb) IS 'Complete a tool call with its tool_result block (first result wins). Errors: ZF003, ZF001, ZF002, 22023.';

-- Name: complete_tool_calls(bigint, bigint, bigint, jsonb, integer, numeric); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_results jsonb, p_next_iteration integer DEFAULT NULL::integer, p_est_usd numeric DEFAULT NULL::numeric) RETURNS TABLE(agent_run_id bigint, stored text[], reserved boolean, reserved_usd numeric, refusal jsonb)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_stored text[];
  v_refusal jsonb;
begin
  if p_next_iteration is not null and (p_next_iteration < 1 or p_est_usd is null or p_est_usd < 0) then
    raise exception using errcode = '22023', message = 'next iteration must be >= 1 and est_usd >= 0',
      detail = format('next iteration %s, est_usd %s', p_next_iteration, p_est_usd);
  end if;
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'complete_tool_calls');
  v_stored := pgflight._store_tool_results(v_run.id, p_attempt_id, p_results, v_now);
  if p_next_iteration is null then
    return query select v_run.id, v_stored, false, 0::numeric, null::jsonb;
    return;
  end if;
  v_refusal := pgflight._reserve(v_run, p_attempt_id, p_next_iteration, p_est_usd, v_now);
  return query select v_run.id, v_stored, v_refusal is null,
                      case when v_refusal is null then p_est_usd else 0 end, v_refusal;
end
$$;

ALTER FUNCTION pgflight.complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_results jsonb, p_next_iteration integer, p_est_usd numeric) OWNER TO pgflight_owner;

-- Name: FUNCTION complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_results jsonb, p_next_iteration integer, p_est_usd numeric); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_results jsonb, p_next_iteration integer, p_est_usd numeric) IS 'Store an iteration''s tool results and admit the next model call, in one transaction; a refused admission is returned (reserved = false, refusal), not raised. Errors: ZF003, ZF001, ZF002, 22023.';

-- Name: create_workspace(text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.create_workspace(p_name text, p_options jsonb DEFAULT '{}'::jsonb) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_id bigint;
begin
  perform pgflight._require_lane('operator', null, 'create_workspace');  -- issue 13: acts on every workspace
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

ALTER FUNCTION pgflight.create_workspace(p_name text, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION create_workspace(p_name text, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.create_workspace(p_name text, p_options jsonb) IS 'Create or update a workspace by name; returns its id. options: daily_usd_cap, max_run_usd (USD). Errors: 22023.';

-- Name: deregister_worker(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.deregister_worker(p_worker_id bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  update pgflight.workers set stopped_at = coalesce(stopped_at, pgflight._now())
   where id = p_worker_id and login = session_user;
  if not found then
    raise exception using errcode = 'ZF010', message = format('unknown worker %s', p_worker_id),
      detail = format('no worker %s registered by login %s', p_worker_id, session_user),
      hint = 'Deregister only the worker ids your own register_worker returned.';
  end if;
end
$$;

ALTER FUNCTION pgflight.deregister_worker(p_worker_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION deregister_worker(p_worker_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.deregister_worker(p_worker_id bigint) IS 'Mark a worker of this login stopped. Errors: ZF010.';

-- Name: enforce_budgets(integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.enforce_budgets(p_limit integer DEFAULT 1000) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_count integer := 0;
  v_row record;
  v_reason text;
begin
  perform pgflight._require_lane('operator', null, 'enforce_budgets');  -- issue 13: acts on every workspace
  for v_row in
    select r.id from pgflight.agent_runs r
      join pgflight.step_attempts a on a.id = r.reserved_attempt_id
     where r.reserved_attempt_id is not null and a.status not in ('claimed', 'running')
     order by r.id
     limit p_limit
       for update of r skip locked
  loop
    perform pgflight._release_reservation(v_row.id);
    v_count := v_count + 1;
  end loop;

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
  end loop;
  return v_count;
end
$$;

ALTER FUNCTION pgflight.enforce_budgets(p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION enforce_budgets(p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.enforce_budgets(p_limit integer) IS 'Sweep: release reservations of lapsed attempts; cancel trees over their USD or wall-time cap. Returns the count.';

-- Name: expire_approvals(integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.expire_approvals(p_limit integer DEFAULT 1000) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_row record;
  v_count integer := 0;
begin
  perform pgflight._require_lane('operator', null, 'expire_approvals');  -- issue 13: acts on every workspace
  for v_row in
    select g.id, g.default_decision from pgflight.approvals g
     where g.decision is null and g.expires_at < (select pgflight._now())
     order by g.expires_at limit p_limit
       for update skip locked
  loop
    perform pgflight._decide(v_row.id, v_row.default_decision, 'expire_approvals', 'expired', 'approval_expired');
    v_count := v_count + 1;
  end loop;
  return v_count;
end
$$;

ALTER FUNCTION pgflight.expire_approvals(p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION expire_approvals(p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.expire_approvals(p_limit integer) IS 'Sweep: apply default decisions to expired gates; returns how many.';

-- Name: fail_step(bigint, bigint, jsonb, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(attempt_id bigint, outcome text, next_attempt_id bigint, available_after timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_status text;
  v_retryable boolean := true;
  v_after double precision;
begin
  if p_options ? 'retryable' then
    if jsonb_typeof(p_options -> 'retryable') <> 'boolean' then
      raise exception using errcode = '22023', message = 'option retryable must be a boolean';
    end if;
    v_retryable := (p_options ->> 'retryable')::boolean;
  end if;
  v_after := pgflight._opt_num(p_options, 'retry_after_s', null);
  if v_after < 0 then
    raise exception using errcode = '22023', message = 'retry_after_s must not be negative';
  end if;
  -- issue 13: the error is capped (ZF005, nothing written)
  perform pgflight._require_cap('max_error_bytes', (select s.max_error_bytes from pgflight.settings s),
                                octet_length(p_error::text), 'error (bytes)');
  v_status := (pgflight._lock_held(p_attempt_id, p_token, 'fail_step')).status;
  return query
    select p_attempt_id, f.outcome, f.next_attempt_id, f.available_after
      from pgflight._fail_attempt(p_attempt_id, v_status, 'failed',
                                  coalesce(p_error, '{"message": "failed"}'), v_retryable, v_after,
                                  'failed') f;
end
$$;

ALTER FUNCTION pgflight.fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb) IS 'Fail a held attempt: retry with backoff or dead letter at the ceiling. Errors: ZF001, ZF002, ZF003, ZF005, ZF012, 22023.';

-- Name: find_effect(bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.find_effect(p_step_id bigint, p_key text) RETURNS TABLE(effect_id bigint, result jsonb, attempt_id bigint, recorded_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_lane_on_step('reader', p_step_id, 'find_effect');  -- issue 13: tenants
  return query
    select e.id, e.result, e.attempt_id, e.recorded_at
      from pgflight.effects e where e.step_id = p_step_id and e.effect_key = p_key;
end
$$;

ALTER FUNCTION pgflight.find_effect(p_step_id bigint, p_key text) OWNER TO pgflight_owner;

-- Name: FUNCTION find_effect(p_step_id bigint, p_key text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.find_effect(p_step_id bigint, p_key text) IS 'The receipt of a step''s effect by key: (effect_id, result, attempt_id, recorded_at), or no row.';

-- Name: grant_workspace(name, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.grant_workspace(p_login name, p_workspace text, p_lane text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint;
  v_added integer;
begin
  if p_lane is null or p_lane not in ('worker', 'operator', 'reader') then
    raise exception using errcode = '22023', message = format('unknown lane %L', p_lane),
      hint = 'The lanes are worker, operator and reader (operator includes reader).';
  end if;
  if p_login is null or not exists (select from pg_catalog.pg_roles r where r.rolname = p_login) then
    raise exception using errcode = '22023', message = format('unknown login %L', p_login),
      hint = 'CREATE ROLE the login first (LOGIN, in role pgflight_worker / _operator / _reader).';
  end if;
  if p_workspace is not null then
    select w.id into v_ws from pgflight.workspaces w where w.name = p_workspace;
    if not found then
      raise exception using errcode = 'ZF003', message = format('unknown workspace %L', p_workspace),
        hint = 'Create it with pgflight.create_workspace first.';
    end if;
  end if;
  insert into pgflight.workspace_grants (login, workspace_id, lane) values (p_login, v_ws, p_lane)
  on conflict do nothing;
  get diagnostics v_added = row_count;
  return v_added > 0;
end
$$;

ALTER FUNCTION pgflight.grant_workspace(p_login name, p_workspace text, p_lane text) OWNER TO pgflight_owner;

-- Name: FUNCTION grant_workspace(p_login name, p_workspace text, p_lane text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.grant_workspace(p_login name, p_workspace text, p_lane text) IS 'Owner only: let a login act in a lane on a workspace (null: every workspace). True when newly granted. Errors: 22023, ZF003.';

-- Name: heartbeat(bigint, bigint[], bigint[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.heartbeat(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[]) RETURNS TABLE(attempt_id bigint, status text, lease_expires_at timestamp with time zone)
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
  -- the worker must be live and registered by this login (issue 13); another login's id is unknown here
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
         case when n.i is not null then 'ok'
              when a.status = 'cancel_requested' and a.fencing_token = q.token then 'cancelled'
              else 'lost' end,
         v_until[n.i]
    from unnest(p_attempt_ids, p_tokens) as q(attempt_id, token)
    left join lateral (select i from generate_subscripts(v_ok, 1) as i
                        where v_ok[i] = q.attempt_id and v_ok_tokens[i] = q.token) n on true
    left join pgflight.step_attempts a on a.id = q.attempt_id;
end
$$;

ALTER FUNCTION pgflight.heartbeat(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[]) OWNER TO pgflight_owner;

-- Name: FUNCTION heartbeat(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.heartbeat(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[]) IS 'Renew the leases a worker holds; per attempt ok | cancelled | lost. Errors: 22023, ZF010.';

-- Name: install_schedules(integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.install_schedules(p_interval_s integer DEFAULT 5) RETURNS TABLE(job_name text, schedule text, command text)
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

  -- Issue 13: every job runs as pgflight_cron (not a superuser, not a member of the owner), in this
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
    command := 'select pgflight.run_sweeps()';
  else
    schedule := '* * * * *';
    command := format('call pgflight.sweep_loop(55, %s)', p_interval_s);
  end if;
  perform cron.schedule_in_database(job_name, schedule, command, current_database(), 'pgflight_cron');
  return next;

  job_name := 'pgflight-purge';
  schedule := '17 * * * *';
  command := 'select pgflight.purge_finished()';
  perform cron.schedule_in_database(job_name, schedule, command, current_database(), 'pgflight_cron');
  return next;

  job_name := 'pgflight-cron-history';
  schedule := '23 * * * *';
  command := $c$delete from cron.job_run_details where end_time < pg_catalog.now() - interval '1 day'$c$;
  perform cron.schedule_in_database(job_name, schedule, command, current_database(), 'pgflight_cron');
  return next;
end
$_$;

ALTER FUNCTION pgflight.install_schedules(p_interval_s integer) OWNER TO pgflight_owner;

-- Name: FUNCTION install_schedules(p_interval_s integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.install_schedules(p_interval_s integer) IS 'Register the sweep, retention and cron-history jobs with pg_cron (1.4 or >= 1.5), run as pgflight_cron; idempotent. Errors: ZF011.';

-- Name: load_transcript(bigint, bigint, bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.load_transcript(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint) RETURNS TABLE(iteration integer, seq integer, role text, block_type text, tool_use_id text, tool_name text, content jsonb, status text, attempt_id bigint, stop_reason text, usd numeric)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
begin
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'load_transcript');
  update pgflight.traces t set status = 'interrupted', updated_at = v_now
   where t.agent_run_id = v_run.id and t.status = 'in_flight';
  return query
    select t.iteration, t.seq, t.role, t.block_type, t.tool_use_id, t.tool_name, t.content, t.status,
           t.attempt_id, c.stop_reason, c.usd
      from pgflight.traces t
      left join pgflight.costs c on c.agent_run_id = t.agent_run_id and c.iteration = t.iteration
     where t.agent_run_id = v_run.id
     order by t.iteration, t.seq;
end
$$;

ALTER FUNCTION pgflight.load_transcript(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION load_transcript(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.load_transcript(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint) IS 'Resume: mark in-flight tool calls interrupted and return the transcript in order. Errors: ZF001, ZF002, ZF003.';

-- Name: mark_tool_call(bigint, bigint, bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text) RETURNS TABLE(trace_id bigint, previous_status text, content jsonb)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_use pgflight.traces;
  v_res pgflight.traces;
  v_id bigint;
begin
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'mark_tool_call');
  select t.* into v_use from pgflight.traces t
   where t.agent_run_id = v_run.id and t.tool_use_id = p_tool_use_id and t.block_type = 'tool_use';
  if not found then
    raise exception using errcode = 'ZF003',
      message = format('no tool_use %L in agent run %s', p_tool_use_id, v_run.id),
      hint = 'Record the model call (record_model_call) before marking its tool calls.';
  end if;
  insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content,
                               status, attempt_id, created_at, updated_at)
  values (v_run.id, v_use.iteration, 1000 + v_use.seq, 'user', 'tool_result', p_tool_use_id, v_use.tool_name,
          null, 'in_flight', p_attempt_id, v_now, v_now)
  on conflict on constraint block_is_unique do nothing
  returning id into v_id;
  if v_id is not null then
    if v_run.tool_calls + 1 > v_run.max_tool_calls then
      raise exception using errcode = 'ZF007',
        message = format('budget exceeded: agent run %s may make %s tool calls', v_run.id, v_run.max_tool_calls),
        detail = format('scope=agent cap=max_tool_calls max_tool_calls=%s tool_calls=%s tool_use_id=%s',
                        v_run.max_tool_calls, v_run.tool_calls, p_tool_use_id),
        hint = 'Raise max_tool_calls for the agent (input caps, or the run''s max_tool_calls option).';
    end if;
    update pgflight.agent_runs set tool_calls = tool_calls + 1, updated_at = v_now where id = v_run.id;
    return query select v_id, 'new'::text, null::jsonb;
    return;
  end if;
  select t.* into v_res from pgflight.traces t
   where t.agent_run_id = v_run.id and t.iteration = v_use.iteration and t.seq = 1000 + v_use.seq;
  if v_res.status = 'interrupted' then
    update pgflight.traces t set status = 'in_flight', attempt_id = p_attempt_id, updated_at = v_now
     where t.agent_run_id = v_run.id and t.iteration = v_use.iteration and t.seq = 1000 + v_use.seq;
  end if;
  return query select v_res.id, v_res.status, v_res.content;
end
$$;

ALTER FUNCTION pgflight.mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text) OWNER TO pgflight_owner;

-- Name: FUNCTION mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text) IS 'Mark a tool call in flight before it runs; returns its previous status. Errors: ZF007, ZF003, ZF001, ZF002.';

-- Name: price_usd(text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) RETURNS numeric
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select pgflight._price_usd(p_model, p_usage) $$;

ALTER FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION price_usd(p_model text, p_usage jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) IS 'USD of a call of p_model with usage p_usage, from model_prices. Errors: 22023 unknown model.';

-- Name: purge_finished(double precision, integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.purge_finished(p_older_than_s double precision DEFAULT NULL::double precision, p_limit integer DEFAULT 100) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ids bigint[];
  v_age double precision;
begin
  perform pgflight._require_lane('operator', null, 'purge_finished');  -- issue 13: acts on every workspace
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
  delete from pgflight.events e where e.run_id = any (v_ids);
  delete from pgflight.runs r where r.id = any (v_ids);
  return cardinality(v_ids);
end
$$;

ALTER FUNCTION pgflight.purge_finished(p_older_than_s double precision, p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION purge_finished(p_older_than_s double precision, p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.purge_finished(p_older_than_s double precision, p_limit integer) IS 'Sweep: delete finished runs older than p_older_than_s seconds with all their rows; returns the count.';

-- Name: reclaim_expired(integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.reclaim_expired(p_limit integer DEFAULT 1000) RETURNS integer
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select pgflight._require_lane('operator', null, 'reclaim_expired');  -- issue 13: acts on every workspace
  select pgflight._reclaim(pgflight._now(), p_limit)
$$;

ALTER FUNCTION pgflight.reclaim_expired(p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION reclaim_expired(p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.reclaim_expired(p_limit integer) IS 'Sweep: reclaim expired leases and overrun deadlines, at most p_limit; returns the count.';

-- Name: record_effect(bigint, bigint, text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb DEFAULT NULL::jsonb) RETURNS TABLE(effect_id bigint, result jsonb, recorded boolean, lease_held boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_att record;
  v_eff record;
begin
  if p_key is null or btrim(p_key) = '' then
    raise exception using errcode = '22023', message = 'effect key is required',
      hint = 'Pass a key that names the effect within its step, e.g. ''charge-invoice-42''.';
  end if;
  -- issue 13: key and receipt are capped (ZF005), and only the login whose worker holds the
  -- attempt may record on it (ZF012 for a leaked token)
  perform pgflight._require_cap('max_name_bytes', (select s.max_name_bytes from pgflight.settings s),
                                octet_length(p_key), 'effect key (bytes)');
  perform pgflight._require_cap('max_receipt_bytes', (select s.max_receipt_bytes from pgflight.settings s),
                                octet_length(p_result::text), 'receipt (bytes)');
  select a.id, a.step_id, a.status, a.fencing_token into v_att
    from pgflight.step_attempts a where a.id = p_attempt_id;
  if not found or v_att.fencing_token is distinct from p_token then
    perform pgflight._reject_write(p_attempt_id, p_token, 'record_effect');
  end if;
  perform pgflight._require_own_attempt(p_attempt_id, p_token, 'record_effect');
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

ALTER FUNCTION pgflight.record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb) IS 'Record the receipt of an external effect (first per step and key wins), even from a holder whose lease lapsed; returns (effect_id, result, recorded, lease_held). Errors: ZF001, ZF003, ZF005, ZF012, 22023.';

-- Name: record_model_call(bigint, bigint, bigint, integer, jsonb, jsonb, text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(agent_run_id bigint, iteration integer, usd numeric, recorded boolean, iterations integer, tool_calls integer, total_usd numeric, marked text[])
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_usd numeric;
  v_in bigint := coalesce((p_usage ->> 'input_tokens')::bigint, 0);
  v_out bigint := coalesce((p_usage ->> 'output_tokens')::bigint, 0);
  v_cw bigint := coalesce((p_usage ->> 'cache_creation_input_tokens')::bigint, 0);
  v_cr bigint := coalesce((p_usage ->> 'cache_read_input_tokens')::bigint, 0);
  v_mark boolean;
  v_free integer;
  v_marked text[];
  v_refusal jsonb;
begin
  if p_blocks is null or jsonb_typeof(p_blocks) <> 'array' then
    raise exception using errcode = '22023', message = 'blocks must be a JSON array',
      hint = 'Pass the response''s content array as returned by the Messages API.';
  end if;
  if p_iteration is null or p_iteration < 1 then
    raise exception using errcode = '22023', message = 'iteration must be >= 1';
  end if;
  if p_options ? 'mark_tools' and jsonb_typeof(p_options -> 'mark_tools') not in ('boolean', 'null') then
    raise exception using errcode = '22023', message = 'option mark_tools must be a boolean';
  end if;
  v_mark := coalesce((p_options ->> 'mark_tools')::boolean, false);
  -- issue 13: the response's blocks are capped like a result (ZF005, nothing written)
  perform pgflight._require_cap('max_result_bytes', (select s.max_result_bytes from pgflight.settings s),
                                octet_length(p_blocks::text), 'model response blocks (bytes)');
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'record_model_call');
  v_usd := pgflight._price_usd(p_model, coalesce(p_usage, '{}'));

  -- the costs row is the iteration's claim: a repeat stores nothing
  insert into pgflight.costs (agent_run_id, iteration, step_id, run_id, workspace_id, model, input_tokens,
                              output_tokens, cache_creation_tokens, cache_read_tokens, usd, stop_reason,
                              retries, attempt_id, at)
  values (v_run.id, p_iteration, v_run.step_id, v_run.run_id, v_run.workspace_id, p_model, v_in, v_out, v_cw, v_cr,
          v_usd, pgflight._opt_text(p_options, 'stop_reason', null),
          pgflight._opt_num(p_options, 'retries', 0)::integer, p_attempt_id, v_now)
  on conflict on constraint one_call_per_iteration do nothing;
  if not found then
    return query select v_run.id, p_iteration, c.usd, false, v_run.iterations, v_run.tool_calls, v_run.usd,
                        '{}'::text[]
      from pgflight.costs c where c.agent_run_id = v_run.id and c.iteration = p_iteration;
    return;
  end if;

  if v_run.reserved_attempt_id = p_attempt_id and v_run.reserved_iteration = p_iteration then
    -- settle: the reservation becomes the actual cost, on the budgets it was taken on (the caps
    -- were checked when it was admitted)
    perform pgflight._move_budget(v_run.reserved_budget_ids, 0, v_usd, v_run.reserved_usd, false, v_now, 'settle');
  else
    if v_run.reserved_attempt_id is not null then
      perform pgflight._move_budget(v_run.reserved_budget_ids, 0, 0, v_run.reserved_usd, false, v_now, 'release');
    end if;
    v_refusal := coalesce(pgflight._iteration_refusal(v_run, p_iteration),
                          pgflight._move_budget(pgflight._call_budget_ids(v_run, v_now), 0, v_usd, 0, true, v_now,
                                                format('agent_run=%s iteration=%s unreserved', v_run.id, p_iteration)));
    if v_refusal is not null then
      perform pgflight._raise_budget_exceeded(v_refusal);
    end if;
  end if;

  -- the response blocks and, with mark_tools, the in-flight rows of as many tool calls as the cap allows
  v_free := case when v_mark then greatest(v_run.max_tool_calls - v_run.tool_calls, 0) else 0 end;
  with b as (
    select (e.ord - 1)::integer as seq, e.v,
           case e.v ->> 'type' when 'redacted_thinking' then 'thinking' else e.v ->> 'type' end as block_type
      from jsonb_array_elements(p_blocks) with ordinality as e(v, ord)
  ), ins as (
    insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content,
                                 status, tokens, attempt_id, created_at, updated_at)
    select v_run.id, p_iteration, b.seq, 'assistant', b.block_type,
           case when b.block_type = 'tool_use' then b.v ->> 'id' end,
           case when b.block_type = 'tool_use' then b.v ->> 'name' end,
           b.v, 'completed', ceil(length(b.v::text) / 4.0)::integer, p_attempt_id, v_now, v_now
      from b
    union all
    select v_run.id, p_iteration, 1000 + u.seq, 'user', 'tool_result', u.v ->> 'id', u.v ->> 'name', null,
           'in_flight', null, p_attempt_id, v_now, v_now
      from (select b.seq, b.v, row_number() over (order by b.seq) as n from b where b.block_type = 'tool_use') u
     where u.n <= v_free
    on conflict on constraint block_is_unique do nothing
    returning seq, tool_use_id, status
  )
  select coalesce(array_agg(ins.tool_use_id order by ins.seq) filter (where ins.status = 'in_flight'), '{}')
    into v_marked from ins;

  update pgflight.agent_runs r
     set iterations = greatest(r.iterations, p_iteration),
         tool_calls = r.tool_calls + cardinality(v_marked),
         input_tokens = r.input_tokens + v_in,
         output_tokens = r.output_tokens + v_out,
         cache_creation_tokens = r.cache_creation_tokens + v_cw,
         cache_read_tokens = r.cache_read_tokens + v_cr,
         usd = r.usd + v_usd,
         reserved_usd = 0, reserved_attempt_id = null, reserved_iteration = null, reserved_budget_ids = null,
         updated_at = v_now
   where r.id = v_run.id
  returning * into v_run;
  return query select v_run.id, p_iteration, v_usd, true, v_run.iterations, v_run.tool_calls, v_run.usd, v_marked;
end
$$;

ALTER FUNCTION pgflight.record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text, p_options jsonb) IS 'Store a model response (traces), its usage and USD cost (costs), settle budgets and totals, and with mark_tools mark its tool calls in flight, in one transaction; returns (agent_run_id, iteration, usd, recorded, totals, marked). Errors: ZF007, ZF001, ZF002, ZF003, 22023.';

-- Name: record_stale_write(bigint, bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.record_stale_write(p_attempt_id bigint, p_token bigint, p_operation text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_att record;
  v_settings pgflight.settings;
begin
  select * into v_settings from pgflight.settings;
  perform pgflight._require_cap('max_name_bytes', v_settings.max_name_bytes, octet_length(p_operation),
                                'operation (bytes)');
  select a.id, a.run_id, w.login into v_att
    from pgflight.step_attempts a left join pgflight.workers w on w.id = a.worker_id where a.id = p_attempt_id;
  if not found then
    return false;  -- an unknown attempt: nothing to record
  end if;
  if v_att.login is distinct from session_user then
    raise exception using
      errcode = 'ZF012',
      message = format('record_stale_write refused: attempt %s is not held by a worker of login %s',
                       p_attempt_id, session_user),
      hint    = 'Log only refusals of writes to attempts your own claim_batch returned.';
  end if;
  perform pgflight._require_cap('max_stale_writes_per_attempt', v_settings.max_stale_writes_per_attempt,
                                (select count(*) + 1 from pgflight.events e
                                  where e.run_id = v_att.run_id and e.attempt_id = p_attempt_id
                                    and e.reason = 'stale_result_rejected'),
                                format('stale-write records of attempt %s', p_attempt_id));
  return pgflight._record_stale(p_attempt_id, p_token, coalesce(p_operation, 'unknown'));
end
$$;

ALTER FUNCTION pgflight.record_stale_write(p_attempt_id bigint, p_token bigint, p_operation text) OWNER TO pgflight_owner;

-- Name: FUNCTION record_stale_write(p_attempt_id bigint, p_token bigint, p_operation text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.record_stale_write(p_attempt_id bigint, p_token bigint, p_operation text) IS 'Log a refused (stale) worker write of this login as a stale_result_rejected event; true when logged. Errors: ZF005 over max_stale_writes_per_attempt, ZF012 another login''s attempt.';

-- Name: record_trace(bigint, bigint, bigint, integer, text, text, jsonb, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_role text, p_block_type text, p_content jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(trace_id bigint, seq integer, created boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_seq integer;
  v_id bigint;
begin
  -- issue 13: a trace block is capped like a result (ZF005, nothing written)
  perform pgflight._require_cap('max_result_bytes', (select s.max_result_bytes from pgflight.settings s),
                                octet_length(p_content::text), 'trace block (bytes)');
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'record_trace');
  v_seq := pgflight._opt_num(p_options, 'seq', null)::integer;
  if v_seq is null then
    select greatest(coalesce(max(t.seq) + 1, 2000), 2000) into v_seq from pgflight.traces t
     where t.agent_run_id = v_run.id and t.iteration = p_iteration and t.seq >= 2000;
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

ALTER FUNCTION pgflight.record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_role text, p_block_type text, p_content jsonb, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_role text, p_block_type text, p_content jsonb, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_role text, p_block_type text, p_content jsonb, p_options jsonb) IS 'Store one trace block (e.g. a transient API error); idempotent by seq. Errors: ZF001, ZF002, ZF003, 22023.';

-- Name: register_worker(text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.register_worker(p_name text, p_options jsonb DEFAULT '{}'::jsonb) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_id bigint;
  v_caps pgflight.settings;
begin
  if p_name is null or btrim(p_name) = '' then
    raise exception using errcode = '22023', message = 'worker name is required',
      hint = 'Pass something that identifies the process, e.g. host:pid.';
  end if;
  -- Issue 13: the worker belongs to the registering login (workers.login defaults to session_user);
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

ALTER FUNCTION pgflight.register_worker(p_name text, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION register_worker(p_name text, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.register_worker(p_name text, p_options jsonb) IS 'Register a worker process of this login; returns its id. options: hostname, pid, recipes. Errors: 22023, ZF005 name, options or live workers over their cap.';

-- Name: release_step(bigint, bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.release_step(p_attempt_id bigint, p_token bigint, p_reason text DEFAULT 'released'::text) RETURNS TABLE(attempt_id bigint, status text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_row pgflight.step_attempts;
  v_now timestamptz := pgflight._now();
begin
  v_row := pgflight._lock_held(p_attempt_id, p_token, 'release_step', true);
  if v_row.status = 'cancel_requested' then
    update pgflight.step_attempts set status = 'cancelled', finished_at = v_now where id = p_attempt_id;
    perform pgflight._event(v_row.run_id, v_row.step_id, p_attempt_id, 'cancel_requested', 'cancelled',
                            v_row.worker_id, 'cancelled', null, jsonb_build_object('note', p_reason));
    perform pgflight._step_finished(v_row.step_id, 'cancelled');
    return query select p_attempt_id, 'cancelled'::text;
    return;
  end if;
  update pgflight.step_attempts set status = 'queued', available_after = v_now where id = p_attempt_id;
  perform pgflight._event(v_row.run_id, v_row.step_id, p_attempt_id, v_row.status, 'queued',
                          v_row.worker_id, 'released', null,
                          case when p_reason is null then null else jsonb_build_object('note', p_reason) end);
  perform pgflight._notify_ready();
  return query select p_attempt_id, 'queued'::text;
end
$$;

ALTER FUNCTION pgflight.release_step(p_attempt_id bigint, p_token bigint, p_reason text) OWNER TO pgflight_owner;

-- Name: FUNCTION release_step(p_attempt_id bigint, p_token bigint, p_reason text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.release_step(p_attempt_id bigint, p_token bigint, p_reason text) IS 'Return a held attempt to queued (no attempt spent), or acknowledge a cancel. Errors: ZF001, ZF003.';

-- Name: replay_from(bigint, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.replay_from(p_step_id bigint, p_actor text DEFAULT NULL::text, p_note text DEFAULT NULL::text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_lane_on_step('operator', p_step_id, 'replay_from');  -- issue 13: tenants
  if not exists (select from pgflight.steps s where s.id = p_step_id) then
    raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
  end if;
  return pgflight._reopen_step(p_step_id, session_user::text, 'replayed', pgflight._actor_note(p_note, p_actor));
end
$$;

ALTER FUNCTION pgflight.replay_from(p_step_id bigint, p_actor text, p_note text) OWNER TO pgflight_owner;

-- Name: FUNCTION replay_from(p_step_id bigint, p_actor text, p_note text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.replay_from(p_step_id bigint, p_actor text, p_note text) IS 'Run a terminal step again and then its ancestors; returns the attempt id. Errors: ZF003, ZF006.';

-- Name: request_approval(bigint, bigint, text, jsonb, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb DEFAULT NULL::jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(decision text, actor text, note text, waiting boolean)
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
  if p_gate_key is null or btrim(p_gate_key) = '' then
    raise exception using errcode = '22023', message = 'gate key is required';
  end if;
  if v_default not in ('approve', 'reject') then
    raise exception using errcode = '22023', message = 'default_decision must be approve or reject',
      detail = format('got %L', v_default);
  end if;
  if v_expires is not null then perform pgflight._require_positive('expires_in_s', v_expires); end if;
  -- issue 13: gate key and request are capped (ZF005, nothing written)
  perform pgflight._require_cap('max_name_bytes', (select s.max_name_bytes from pgflight.settings s),
                                octet_length(p_gate_key), 'gate key (bytes)');
  perform pgflight._require_cap('max_approval_request_bytes',
                                (select s.max_approval_request_bytes from pgflight.settings s),
                                octet_length(p_request::text), 'approval request (bytes)');
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
    return query select v_gate.decision, v_gate.actor, v_gate.note, false;
    return;
  end if;
  update pgflight.step_attempts set status = 'awaiting_approval' where id = p_attempt_id;
  perform pgflight._event(v_att.run_id, v_att.step_id, p_attempt_id, v_att.status, 'awaiting_approval',
                          v_att.worker_id, 'approval_requested', null,
                          jsonb_build_object('gate_key', p_gate_key, 'expires_at', v_gate.expires_at));
  return query select null::text, null::text, null::text, true;
end
$$;

ALTER FUNCTION pgflight.request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb, p_options jsonb) IS 'Ask for a decision at a gate: returns it at once if known, else parks the attempt in awaiting_approval (waiting = true). Errors: ZF001, ZF002, ZF003, 22023.';

-- Name: reserve_budget(bigint, bigint, bigint, integer, numeric); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.reserve_budget(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_est_usd numeric) RETURNS TABLE(agent_run_id bigint, iteration integer, reserved_usd numeric, budget_ids bigint[])
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_refusal jsonb;
begin
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

ALTER FUNCTION pgflight.reserve_budget(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_est_usd numeric) OWNER TO pgflight_owner;

-- Name: FUNCTION reserve_budget(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_est_usd numeric); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.reserve_budget(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_est_usd numeric) IS 'Admission before a model call: check caps and reserve est USD atomically. Errors: ZF007, ZF001, ZF002, ZF003, 22023.';

-- Name: retry_step(bigint, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.retry_step(p_step_id bigint, p_actor text DEFAULT NULL::text, p_note text DEFAULT NULL::text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_status text;
begin
  perform pgflight._require_lane_on_step('operator', p_step_id, 'retry_step');  -- issue 13: tenants
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

ALTER FUNCTION pgflight.retry_step(p_step_id bigint, p_actor text, p_note text) OWNER TO pgflight_owner;

-- Name: FUNCTION retry_step(p_step_id bigint, p_actor text, p_note text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.retry_step(p_step_id bigint, p_actor text, p_note text) IS 'Fresh attempt for a dead-lettered step; returns the attempt id. Errors: ZF003, ZF006.';

-- Name: revoke_workspace(name, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.revoke_workspace(p_login name, p_workspace text, p_lane text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint;
  v_removed integer;
begin
  if p_workspace is not null then
    select w.id into v_ws from pgflight.workspaces w where w.name = p_workspace;
    if not found then
      raise exception using errcode = 'ZF003', message = format('unknown workspace %L', p_workspace);
    end if;
  end if;
  delete from pgflight.workspace_grants g
   where g.login = p_login and g.lane = p_lane and g.workspace_id is not distinct from v_ws;
  get diagnostics v_removed = row_count;
  return v_removed > 0;
end
$$;

ALTER FUNCTION pgflight.revoke_workspace(p_login name, p_workspace text, p_lane text) OWNER TO pgflight_owner;

-- Name: FUNCTION revoke_workspace(p_login name, p_workspace text, p_lane text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.revoke_workspace(p_login name, p_workspace text, p_lane text) IS 'Owner only: remove a login''s lane on a workspace (null: its every-workspace grant). True when removed. Errors: ZF003.';

-- Name: run_audit(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.run_audit(p_run_id bigint) RETURNS TABLE(run_id bigint, status text, steps bigint, attempts bigint, retries bigint, reclaimed_attempts bigint, stale_writes_rejected bigint, dead_letters bigint, model_calls bigint, input_tokens bigint, output_tokens bigint, tokens bigint, usd numeric, wall_time_s double precision, steps_succeeded bigint, steps_unfinished bigint, steps_succeeded_twice bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_lane_on_run('reader', p_run_id, 'run_audit');  -- issue 13: tenants
  return query
  with per_step as (
    -- one row per step: its attempts by outcome and the status of its latest attempt
    select s.id,
           count(a.id) as attempts,
           count(a.id) filter (where a.attempt_no > 1) as retries,
           count(a.id) filter (where a.status = 'lease_expired') as reclaimed,
           count(a.id) filter (where a.status = 'succeeded') as succeeded,
           max(a.status) filter (where a.attempt_no = s.last_attempt_no) as latest
      from pgflight.steps s
      join pgflight.step_attempts a on a.step_id = s.id
     where s.run_id = p_run_id
     group by s.id
  ), spend as (
    -- costs has its own run index: summed apart so the join above does not repeat its rows
    select count(*) as calls, coalesce(sum(c.input_tokens), 0) as input_tokens,
           coalesce(sum(c.output_tokens), 0) as output_tokens,
           coalesce(sum(c.input_tokens + c.output_tokens + c.cache_creation_tokens + c.cache_read_tokens), 0)
             as tokens,
           coalesce(sum(c.usd), 0) as usd
      from pgflight.costs c where c.run_id = p_run_id
  )
  select r.id, r.status,
         (select count(*) from per_step),
         (select coalesce(sum(p.attempts), 0)::bigint from per_step p),
         (select coalesce(sum(p.retries), 0)::bigint from per_step p),
         (select coalesce(sum(p.reclaimed), 0)::bigint from per_step p),
         (select count(*) from pgflight.events e
           where e.run_id = r.id and e.reason = 'stale_result_rejected'),
         (select count(*) from per_step p where p.latest = 'dead_letter'),
         sp.calls, sp.input_tokens::bigint, sp.output_tokens::bigint, sp.tokens::bigint, sp.usd,
         extract(epoch from coalesce(r.finished_at, pgflight._now()) - r.created_at)::double precision,
         (select count(*) from per_step p where p.latest = 'succeeded'),
         (select count(*) from per_step p
           where p.latest not in ('succeeded', 'dead_letter', 'cancelled')),
         (select count(*) from per_step p where p.succeeded > 1)
    from pgflight.runs r, spend sp
   where r.id = p_run_id;
  if not found then
    raise exception using errcode = 'ZF003', message = format('unknown run %s', p_run_id),
      hint = 'List runs with pgflight runs.';
  end if;
end
$$;

ALTER FUNCTION pgflight.run_audit(p_run_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION run_audit(p_run_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.run_audit(p_run_id bigint) IS 'Audit of a run from the tables: steps, attempts, retries, reclaimed attempts, stale writes rejected, dead letters, model calls, tokens, USD, wall time (s), and the succeeded / unfinished / succeeded-twice step counts. Errors: ZF003 unknown run.';

-- Name: run_status(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.run_status(p_run_id bigint) RETURNS TABLE(run_id bigint, workspace text, recipe text, status text, created_at timestamp with time zone, finished_at timestamp with time zone, steps_total bigint, steps_queued bigint, steps_running bigint, steps_waiting bigint, steps_succeeded bigint, steps_dead_letter bigint, steps_cancelled bigint, attempts_total bigint, result jsonb, error jsonb)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_lane_on_run('reader', p_run_id, 'run_status');  -- issue 13: tenants
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

ALTER FUNCTION pgflight.run_status(p_run_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION run_status(p_run_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.run_status(p_run_id bigint) IS 'A run''s status, step counts by status, attempts, and the root result. Errors: ZF003 unknown run.';

-- Name: run_sweeps(); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.run_sweeps() RETURNS TABLE(sweep text, affected integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_lane('operator', null, 'run_sweeps');  -- issue 13: acts on every workspace
  return query select 'reclaim_expired'::text, pgflight.reclaim_expired(1000);
  return query select 'wake_parents'::text, pgflight.wake_parents(1000);
  return query select 'expire_approvals'::text, pgflight.expire_approvals(1000);
  return query select 'enforce_budgets'::text, pgflight.enforce_budgets(1000);
end
$$;

ALTER FUNCTION pgflight.run_sweeps() OWNER TO pgflight_owner;

-- Name: FUNCTION run_sweeps(); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.run_sweeps() IS 'Run every sweep once; returns rows affected per sweep.';

-- Name: spawn_children(bigint, bigint, jsonb, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.spawn_children(p_attempt_id bigint, p_token bigint, p_children jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(children_total integer, created integer, parked boolean)
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
  v_max_bytes bigint;
  v_settings pgflight.settings;
begin
  if p_children is null or jsonb_typeof(p_children) <> 'array' then
    raise exception using errcode = '22023', message = 'children must be a JSON array',
      hint = 'e.g. [{"key": "doc-1", "recipe": "review", "input": {...}}]';
  end if;
  select * into v_settings from pgflight.settings;
  perform pgflight._require_cap('max_children_per_call', v_settings.max_children_per_call,
                                jsonb_array_length(p_children), 'children in one call');
  v_att := pgflight._lock_held(p_attempt_id, p_token, 'spawn_children');
  v_max_bytes := v_settings.max_input_bytes;
  select e.ord, e.value into v_bad
    from jsonb_array_elements(p_children) with ordinality as e(value, ord)
   where jsonb_typeof(e.value) <> 'object'
      or jsonb_typeof(e.value -> 'key') is distinct from 'string' or btrim(e.value ->> 'key') = ''
      or jsonb_typeof(e.value -> 'recipe') is distinct from 'string' or btrim(e.value ->> 'recipe') = ''
      or (e.value ? 'options' and jsonb_typeof(e.value -> 'options') <> 'object')
      or pgflight._bad_child_options(e.value -> 'options')
      or octet_length(coalesce(e.value -> 'input', '{}')::text) > v_max_bytes
   limit 1;
  if found then
    perform pgflight._require_cap('max_input_bytes', v_max_bytes,
                                  octet_length(coalesce(v_bad.value -> 'input', '{}')::text),
                                  format('child %s input (bytes)', v_bad.ord));
    raise exception using errcode = '22023', message = format('child %s is malformed', v_bad.ord),
      detail = left(v_bad.value::text, 200),
      hint = 'Each child needs a non-blank string key and recipe; options must be an object whose '
             'priority is an integer, max_attempts a positive integer, lease_s and max_runtime_s '
             'positive numbers, backoff an object.';
  end if;

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
      from jsonb_array_elements(p_children) as e(value)
  ), inserted as (
    insert into pgflight.steps (run_id, parent_id, depth, step_key, recipe, input, priority, max_attempts,
                                backoff, lease_s, max_runtime_s, created_at)
    select v_parent.run_id, v_parent.id, v_parent.depth + 1, w.step_key, w.recipe, w.input,
           coalesce((w.o ->> 'priority')::integer, v_parent.priority),
           coalesce((w.o ->> 'max_attempts')::integer, v_parent.max_attempts),
           coalesce(w.o -> 'backoff', v_parent.backoff),
           coalesce((w.o ->> 'lease_s')::double precision, v_parent.lease_s),
           coalesce((w.o ->> 'max_runtime_s')::double precision, v_parent.max_runtime_s),
           v_now
      from wanted w
    on conflict (parent_id, step_key) where parent_id is not null do nothing
    returning id, run_id, recipe, priority
  ), attempts as (
    insert into pgflight.step_attempts (step_id, run_id, attempt_no, recipe, priority, status, available_after, created_at)
    select i.id, i.run_id, 1, i.recipe, i.priority, 'queued', v_now, v_now from inserted i
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
           fail_fast = coalesce((p_options ->> 'fail_fast')::boolean, fail_fast)
     where id = v_parent.id;
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

ALTER FUNCTION pgflight.spawn_children(p_attempt_id bigint, p_token bigint, p_children jsonb, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION spawn_children(p_attempt_id bigint, p_token bigint, p_children jsonb, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.spawn_children(p_attempt_id bigint, p_token bigint, p_children jsonb, p_options jsonb) IS 'Fan-out: create child steps (idempotent by key) and park the parent in awaiting_children. Returns (children_total, created, parked). Errors: ZF001, ZF002, ZF003, ZF005, 22023.';

-- Name: start_step(bigint, bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.start_step(p_attempt_id bigint, p_token bigint) RETURNS TABLE(attempt_id bigint, started_at timestamp with time zone, lease_expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_row record;
begin
  update pgflight.step_attempts a
     set status = 'running', started_at = v_now
   where a.id = p_attempt_id and a.fencing_token = p_token and a.status = 'claimed'
     -- issue 13: only the login whose worker holds the attempt (else ZF012 from _reject_write)
     and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
  returning a.id, a.run_id, a.step_id, a.worker_id, a.started_at, a.lease_expires_at into v_row;
  if found then
    perform pgflight._event(v_row.run_id, v_row.step_id, v_row.id, 'claimed', 'running', v_row.worker_id, 'started');
    return query select v_row.id, v_row.started_at, v_row.lease_expires_at;
    return;
  end if;
  return query select a.id, a.started_at, a.lease_expires_at from pgflight.step_attempts a
    where a.id = p_attempt_id and a.fencing_token = p_token and a.status = 'running'
      and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user);
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, 'start_step');
  end if;
end
$$;

ALTER FUNCTION pgflight.start_step(p_attempt_id bigint, p_token bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION start_step(p_attempt_id bigint, p_token bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.start_step(p_attempt_id bigint, p_token bigint) IS 'claimed -> running. Errors: ZF001 lease lost, ZF002 cancelled, ZF003 unknown attempt, ZF012 another login''s attempt.';

-- Name: submit_run(text, text, jsonb, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.submit_run(p_workspace text, p_recipe text, p_input jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(run_id bigint, step_id bigint, attempt_id bigint, created boolean)
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
  v_max_attempts double precision;
begin
  if p_recipe is null or btrim(p_recipe) = '' then
    raise exception using errcode = '22023', message = 'recipe is required',
      hint = 'Pass the name a worker registered with @recipe(...).';
  end if;
  if p_input is null then
    raise exception using errcode = '22023', message = 'input is required',
      hint = 'Pass ''{}''::jsonb for a recipe that takes no input.';
  end if;
  if p_options is not null and jsonb_typeof(p_options) <> 'object' then
    raise exception using errcode = '22023', message = 'options must be a JSON object',
      detail = format('got a JSON %s', jsonb_typeof(p_options));
  end if;
  select w.id, w.max_run_usd into v_ws, v_ws_max_usd from pgflight.workspaces w where w.name = p_workspace;
  if not found then
    raise exception using errcode = 'ZF003', message = format('unknown workspace %L', p_workspace),
      hint = 'Create it first: select pgflight.create_workspace(name).';
  end if;
  perform pgflight._require_lane('operator', v_ws, 'submit_run');  -- issue 13: tenants
  select * into v_settings from pgflight.settings;
  v_size := octet_length(p_input::text);
  if v_size > v_settings.max_input_bytes then
    raise exception using errcode = 'ZF005', message = 'input too large',
      detail = format('input is %s bytes; the cap is %s bytes', v_size, v_settings.max_input_bytes),
      hint = 'Store large payloads elsewhere and pass a reference, or raise settings.max_input_bytes.';
  end if;
  v_max_attempts := pgflight._opt_num(p_options, 'max_attempts', v_settings.default_max_attempts);
  if v_max_attempts < 1 or v_max_attempts <> trunc(v_max_attempts) then
    raise exception using errcode = '22023', message = 'max_attempts must be a positive integer',
      detail = format('got %s', v_max_attempts);
  end if;
  if p_options ? 'lease_s' then perform pgflight._require_positive('lease_s', pgflight._opt_num(p_options, 'lease_s', null)); end if;
  if p_options ? 'max_runtime_s' then perform pgflight._require_positive('max_runtime_s', pgflight._opt_num(p_options, 'max_runtime_s', null)); end if;
  if p_options ? 'backoff' and jsonb_typeof(p_options -> 'backoff') <> 'object' then
    raise exception using errcode = '22023', message = 'backoff must be a JSON object',
      hint = 'e.g. {"base_s": 1, "factor": 2, "max_s": 300, "jitter": 0.2}';
  end if;
  v_not_before := coalesce(pgflight._opt_text(p_options, 'not_before', null)::timestamptz, v_now);

  v_key := pgflight._opt_text(p_options, 'idempotency_key', null);
  v_hash := encode(sha256(convert_to(p_input::text, 'UTF8')), 'hex');

  -- the root step's id is taken first, so the run row is written once, with it
  v_step := nextval(pg_get_serial_sequence('pgflight.steps', 'id'));
  insert into pgflight.runs (workspace_id, recipe, idempotency_key, input_hash, submitted_by, options,
                             max_usd, max_wall_s, max_iterations, max_tool_calls, created_at, root_step_id)
  values (v_ws, p_recipe, v_key, v_hash, pgflight._opt_text(p_options, 'submitted_by', session_user::text),
          coalesce(p_options, '{}'),
          coalesce(pgflight._opt_num(p_options, 'max_usd', null)::numeric, v_ws_max_usd),
          pgflight._opt_num(p_options, 'max_wall_s', null),
          pgflight._opt_num(p_options, 'max_iterations', null)::integer,
          pgflight._opt_num(p_options, 'max_tool_calls', null)::integer,
          v_now, v_step)
  on conflict (workspace_id, idempotency_key) do nothing
  returning id into v_run;

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
                              backoff, lease_s, max_runtime_s, created_at)
  values (v_step, v_run, null, 0, 'root', p_recipe, p_input,
          pgflight._opt_num(p_options, 'priority', 0)::integer, v_max_attempts::integer,
          coalesce(p_options -> 'backoff', '{}'),
          pgflight._opt_num(p_options, 'lease_s', null), pgflight._opt_num(p_options, 'max_runtime_s', null), v_now);
  insert into pgflight.step_attempts (step_id, run_id, attempt_no, recipe, priority, status, available_after, created_at)
  values (v_step, v_run, 1, p_recipe, pgflight._opt_num(p_options, 'priority', 0)::integer, 'queued', v_not_before, v_now)
  returning id into v_attempt;
  perform pgflight._event(v_run, v_step, v_attempt, null, 'queued', null, 'queued',
                          pgflight._opt_text(p_options, 'submitted_by', session_user::text));
  if v_not_before <= v_now then
    perform pgflight._notify_ready();
  end if;
  return query select v_run, v_step, v_attempt, true;
end
$$;

ALTER FUNCTION pgflight.submit_run(p_workspace text, p_recipe text, p_input jsonb, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION submit_run(p_workspace text, p_recipe text, p_input jsonb, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.submit_run(p_workspace text, p_recipe text, p_input jsonb, p_options jsonb) IS 'Submit a run (root step of a recipe). Returns (run_id, step_id, attempt_id, created). Errors: 22023, ZF003 unknown workspace, ZF004 idempotency conflict, ZF005 input too large.';

-- Name: sweep_loop(double precision, double precision); Type: PROCEDURE; Schema: pgflight; Owner: pgflight_owner

CREATE PROCEDURE pgflight.sweep_loop(IN p_duration_s double precision DEFAULT 55, IN p_interval_s double precision DEFAULT 5)
    LANGUAGE plpgsql
    AS $$
declare
  c_lock constant bigint := 7383617326517504001;  -- 'pgflight.sweep_loop'
  v_end timestamptz := pg_catalog.clock_timestamp() + pg_catalog.make_interval(secs => p_duration_s);
  v_backlog boolean;
  v_batch integer;
  v_state text;
  v_msg text;
begin
  while not pg_catalog.pg_try_advisory_lock(c_lock) loop
    if pg_catalog.clock_timestamp() > v_end then
      raise warning 'pgflight.sweep_loop: another sweep loop held the lock for % s; not sweeping', p_duration_s;
      return;
    end if;
    perform pg_catalog.pg_sleep(0.2);
  end loop;
  loop
    v_backlog := false;
    begin
      perform pg_catalog.set_config('lock_timeout',
        coalesce(nullif(pg_catalog.current_setting('pgflight.sweep_lock_timeout', true), ''), '2s'), true);
      select coalesce(pg_catalog.bool_or(s.affected >= 1000), false) into v_backlog
        from pgflight.run_sweeps() s;
    exception when others then
      get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text;
      raise warning 'pgflight.sweep_loop: a sweep pass failed (%): %', v_state, v_msg;
    end;
    commit;
    begin
      perform pg_catalog.set_config('lock_timeout',
        coalesce(nullif(pg_catalog.current_setting('pgflight.sweep_lock_timeout', true), ''), '2s'), true);
      v_batch := coalesce(nullif(pg_catalog.current_setting('pgflight.sweep_purge_batch', true), ''), '1000')::integer;
      if v_batch > 0 and pgflight.purge_finished(null, v_batch) >= v_batch then
        v_backlog := true;
      end if;
    exception when others then
      get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text;
      raise warning 'pgflight.sweep_loop: a purge pass failed (%): %', v_state, v_msg;
    end;
    commit;
    exit when pg_catalog.clock_timestamp() > v_end
           or (not v_backlog and pg_catalog.clock_timestamp() + pg_catalog.make_interval(secs => p_interval_s) > v_end);
    if not v_backlog then
      perform pg_catalog.pg_sleep(p_interval_s);
    end if;
  end loop;
  perform pg_catalog.pg_advisory_unlock(c_lock);
end
$$;

ALTER PROCEDURE pgflight.sweep_loop(IN p_duration_s double precision, IN p_interval_s double precision) OWNER TO pgflight_owner;

-- Name: PROCEDURE sweep_loop(IN p_duration_s double precision, IN p_interval_s double precision); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON PROCEDURE pgflight.sweep_loop(IN p_duration_s double precision, IN p_interval_s double precision) IS 'Sweep every p_interval_s seconds for p_duration_s seconds, one loop at a time, committing after each pass; a failing pass warns and the loop goes on (pg_cron 1.4).';

-- Name: uninstall_schedules(); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.uninstall_schedules() RETURNS integer
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
  -- by job id: the jobs run as pgflight_cron (issue 13), so unschedule(name), which looks for the
  -- caller's own job of that name, would not find them
  for v_id in select j.jobid from cron.job j
               where j.jobname like 'pgflight-%' and j.database = current_database() loop
    perform cron.unschedule(v_id);
    v_count := v_count + 1;
  end loop;
  return v_count;
end
$$;

ALTER FUNCTION pgflight.uninstall_schedules() OWNER TO pgflight_owner;

-- Name: FUNCTION uninstall_schedules(); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.uninstall_schedules() IS 'Remove pgflight''s pg_cron jobs; returns how many.';

-- Name: wake_parents(integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.wake_parents(p_limit integer DEFAULT 1000) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_row record;
  v_count integer := 0;
begin
  perform pgflight._require_lane('operator', null, 'wake_parents');  -- issue 13: acts on every workspace
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

ALTER FUNCTION pgflight.wake_parents(p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION wake_parents(p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.wake_parents(p_limit integer) IS 'Sweep: requeue parked parents whose children are all terminal; returns how many woke.';

-- Name: agent_runs_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE pgflight.agent_runs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.agent_runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: approvals; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.approvals (
    id bigint NOT NULL,
    step_id bigint NOT NULL,
    gate_key text NOT NULL,
    request jsonb,
    decision text,
    actor text,
    note text,
    default_decision text DEFAULT 'reject'::text NOT NULL,
    requested_at timestamp with time zone,
    expires_at timestamp with time zone,
    decided_at timestamp with time zone,
    CONSTRAINT decided_at_is_set_with_decision CHECK (((decision IS NULL) = (decided_at IS NULL))),
    CONSTRAINT decision_is_known CHECK (((decision IS NULL) OR (decision = ANY (ARRAY['approve'::text, 'reject'::text])))),
    CONSTRAINT default_decision_is_known CHECK ((default_decision = ANY (ARRAY['approve'::text, 'reject'::text])))
);

ALTER TABLE pgflight.approvals OWNER TO pgflight_owner;

-- Name: TABLE approvals; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.approvals IS 'Approval gates per step and gate_key. decision: approve | reject (null while pending). expires_at: when expire_approvals applies default_decision.';

-- Name: approvals_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE pgflight.approvals ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.approvals_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: runs; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.runs (
    id bigint NOT NULL,
    workspace_id bigint NOT NULL,
    recipe text NOT NULL,
    status text DEFAULT 'running'::text NOT NULL,
    idempotency_key text,
    input_hash text NOT NULL,
    root_step_id bigint,
    submitted_by text,
    options jsonb DEFAULT '{}'::jsonb NOT NULL,
    max_usd numeric(14,6),
    max_wall_s double precision,
    max_iterations integer,
    max_tool_calls integer,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    finished_at timestamp with time zone,
    CONSTRAINT finished_at_is_set_when_terminal CHECK (((status = 'running'::text) = (finished_at IS NULL))),
    CONSTRAINT status_is_known CHECK ((status = ANY (ARRAY['running'::text, 'succeeded'::text, 'failed'::text, 'cancelled'::text])))
);

ALTER TABLE pgflight.runs OWNER TO pgflight_owner;

-- Name: TABLE runs; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.runs IS 'Top-level jobs. status: running | succeeded | failed (root step dead-lettered) | cancelled. input_hash: sha256 of the input JSON, to tell a repeated idempotency key from a conflicting one. max_usd (USD), max_wall_s (seconds), max_iterations, max_tool_calls: budgets of the whole tree.';

-- Name: workers; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.workers (
    id bigint NOT NULL,
    name text NOT NULL,
    hostname text,
    pid integer,
    recipes text[],
    options jsonb DEFAULT '{}'::jsonb NOT NULL,
    started_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    last_seen_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    stopped_at timestamp with time zone,
    login name DEFAULT SESSION_USER NOT NULL
);

ALTER TABLE pgflight.workers OWNER TO pgflight_owner;

-- Name: TABLE workers; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.workers IS 'Worker processes. last_seen_at is renewed by heartbeat; a worker is alive while its leases are.';

-- Name: COLUMN workers.login; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.workers.login IS 'The login (session_user) that registered the worker; only it may use the worker id.';

-- Name: attempts; Type: VIEW; Schema: pgflight; Owner: pgflight_owner

CREATE VIEW pgflight.attempts WITH (security_barrier='true') AS
 SELECT a.id AS attempt_id,
    a.step_id,
    a.run_id,
    a.attempt_no,
    a.recipe,
    a.status,
    a.worker_id,
        CASE
            WHEN (w.login = SESSION_USER) THEN a.fencing_token
            ELSE NULL::bigint
        END AS fencing_token,
    a.claimed_at,
    a.started_at,
    a.lease_expires_at,
    a.deadline_at,
    a.finished_at,
    a.available_after,
    a.reason,
    a.error,
    a.result
   FROM (pgflight.step_attempts a
     LEFT JOIN pgflight.workers w ON ((w.id = a.worker_id)))
  WHERE ((( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces) IS NULL) OR (EXISTS ( SELECT
           FROM pgflight.runs r
          WHERE ((r.id = a.run_id) AND (r.workspace_id = ANY (COALESCE(( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces), '{}'::bigint[])))))));

ALTER TABLE pgflight.attempts OWNER TO pgflight_owner;

-- Name: VIEW attempts; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON VIEW pgflight.attempts IS 'Every attempt of the login''s workspaces, with its claim metadata (never cleared); the fencing token only on attempts of the login''s own workers.';

-- Name: budgets; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.budgets (
    id bigint NOT NULL,
    scope text NOT NULL,
    workspace_id bigint NOT NULL,
    run_id bigint,
    step_id bigint,
    day date,
    limit_usd numeric(16,8),
    max_wall_s double precision,
    started_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    spent_usd numeric(16,8) DEFAULT 0 NOT NULL,
    reserved_usd numeric(16,8) DEFAULT 0 NOT NULL,
    exceeded_at timestamp with time zone,
    CONSTRAINT amounts_are_not_negative CHECK (((spent_usd >= (0)::numeric) AND (reserved_usd >= (0)::numeric) AND ((limit_usd IS NULL) OR (limit_usd >= (0)::numeric)))),
    CONSTRAINT max_wall_is_positive CHECK (((max_wall_s IS NULL) OR (max_wall_s > (0)::double precision))),
    CONSTRAINT scope_is_known CHECK ((scope = ANY (ARRAY['run'::text, 'step'::text, 'workspace_day'::text]))),
    CONSTRAINT scope_names_its_key CHECK (
CASE scope
    WHEN 'run'::text THEN ((run_id IS NOT NULL) AND (step_id IS NULL) AND (day IS NULL))
    WHEN 'step'::text THEN ((run_id IS NOT NULL) AND (step_id IS NOT NULL) AND (day IS NULL))
    ELSE ((run_id IS NULL) AND (step_id IS NULL) AND (day IS NOT NULL))
END)
);

ALTER TABLE pgflight.budgets OWNER TO pgflight_owner;

-- Name: TABLE budgets; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.budgets IS 'Spend budgets: scope run | step (an agent''s subtree) | workspace_day (UTC day). limit_usd (USD, null: no USD cap), max_wall_s (seconds from started_at, null: none), spent_usd and reserved_usd (USD). Invariant held by admission: spent + reserved <= limit, except the documented overshoot of calls whose actual cost exceeded their estimate. exceeded_at: when enforce_budgets cancelled the tree.';

-- Name: budgets_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE pgflight.budgets ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.budgets_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: costs; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.costs (
    id bigint NOT NULL,
    agent_run_id bigint NOT NULL,
    iteration integer NOT NULL,
    step_id bigint NOT NULL,
    run_id bigint NOT NULL,
    workspace_id bigint NOT NULL,
    model text NOT NULL,
    input_tokens bigint DEFAULT 0 NOT NULL,
    output_tokens bigint DEFAULT 0 NOT NULL,
    cache_creation_tokens bigint DEFAULT 0 NOT NULL,
    cache_read_tokens bigint DEFAULT 0 NOT NULL,
    usd numeric(16,8) NOT NULL,
    stop_reason text,
    retries integer DEFAULT 0 NOT NULL,
    attempt_id bigint,
    at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT tokens_are_not_negative CHECK (((input_tokens >= 0) AND (output_tokens >= 0) AND (cache_creation_tokens >= 0) AND (cache_read_tokens >= 0))),
    CONSTRAINT usd_is_not_negative CHECK ((usd >= (0)::numeric))
);

ALTER TABLE pgflight.costs OWNER TO pgflight_owner;

-- Name: TABLE costs; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.costs IS 'One row per model call: tokens (input, output, cache_creation, cache_read), usd (USD = tokens x model_prices / 1e6), the stop_reason, the transient errors retried before it (retries), and which agent, step, run and workspace it is billed to.';

-- Name: costs_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE pgflight.costs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.costs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: steps; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.steps (
    id bigint NOT NULL,
    run_id bigint NOT NULL,
    parent_id bigint,
    depth integer DEFAULT 0 NOT NULL,
    step_key text NOT NULL,
    recipe text NOT NULL,
    input jsonb NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    max_attempts integer NOT NULL,
    backoff jsonb DEFAULT '{}'::jsonb NOT NULL,
    lease_s double precision,
    max_runtime_s double precision,
    failed_attempts integer DEFAULT 0 NOT NULL,
    last_attempt_no integer DEFAULT 1 NOT NULL,
    children_pending integer DEFAULT 0 NOT NULL,
    fail_fast boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT failed_attempts_is_not_negative CHECK ((failed_attempts >= 0)),
    CONSTRAINT lease_is_positive CHECK (((lease_s IS NULL) OR (lease_s > (0)::double precision))),
    CONSTRAINT max_attempts_is_positive CHECK ((max_attempts > 0)),
    CONSTRAINT max_runtime_is_positive CHECK (((max_runtime_s IS NULL) OR (max_runtime_s > (0)::double precision))),
    CONSTRAINT root_has_depth_zero CHECK (((parent_id IS NULL) = (depth = 0)))
);

ALTER TABLE pgflight.steps OWNER TO pgflight_owner;

-- Name: TABLE steps; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.steps IS 'Step identity. failed_attempts counts attempts that ended failed, lease_expired or timed_out: at max_attempts the step is dead-lettered. children_pending counts children not yet terminal while the step waits in awaiting_children: the last child to finish wakes the parent (O(1)). lease_s / max_runtime_s (seconds) override the claim lease and bound the runtime of one attempt.';

-- Name: step_status; Type: VIEW; Schema: pgflight; Owner: pgflight_owner

CREATE VIEW pgflight.step_status WITH (security_barrier='true') AS
 SELECT s.id AS step_id,
    s.run_id,
    s.parent_id,
    s.depth,
    s.step_key,
    s.recipe,
    a.id AS attempt_id,
    a.attempt_no,
    a.status,
    s.failed_attempts,
    s.max_attempts,
    a.worker_id,
    a.claimed_at,
    a.started_at,
    a.finished_at,
    a.lease_expires_at,
    a.deadline_at,
    a.result,
    a.error,
    a.reason,
    s.children_pending,
    s.created_at
   FROM (pgflight.steps s
     JOIN pgflight.step_attempts a ON (((a.step_id = s.id) AND (a.attempt_no = s.last_attempt_no))))
  WHERE ((( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces) IS NULL) OR (EXISTS ( SELECT
           FROM pgflight.runs r
          WHERE ((r.id = s.run_id) AND (r.workspace_id = ANY (COALESCE(( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces), '{}'::bigint[])))))));

ALTER TABLE pgflight.step_status OWNER TO pgflight_owner;

-- Name: VIEW step_status; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON VIEW pgflight.step_status IS 'Each step with the status of its latest attempt (the step''s current state).';

-- Name: dead_letters; Type: VIEW; Schema: pgflight; Owner: pgflight_owner

CREATE VIEW pgflight.dead_letters AS
 SELECT st.step_id,
    st.run_id,
    st.step_key,
    st.recipe,
    st.attempt_id,
    st.attempt_no,
    st.failed_attempts,
    st.reason,
    st.error,
    st.finished_at
   FROM pgflight.step_status st
  WHERE (st.status = 'dead_letter'::text);

ALTER TABLE pgflight.dead_letters OWNER TO pgflight_owner;

-- Name: VIEW dead_letters; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON VIEW pgflight.dead_letters IS 'Dead-lettered steps with their last error.';

-- Name: effects; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.effects (
    id bigint NOT NULL,
    step_id bigint NOT NULL,
    effect_key text NOT NULL,
    result jsonb,
    attempt_id bigint NOT NULL,
    recorded_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT effect_key_is_not_blank CHECK (((btrim(effect_key) <> ''::text) AND (length(effect_key) <= 500)))
);

ALTER TABLE pgflight.effects OWNER TO pgflight_owner;

-- Name: TABLE effects; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.effects IS 'Receipts of external side effects: one per (step_id, effect_key), with the effect''s JSON result and the attempt that performed it. The first receipt recorded for a key wins.';

-- Name: effects_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE pgflight.effects ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.effects_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: engine_health; Type: VIEW; Schema: pgflight; Owner: pgflight_owner

CREATE VIEW pgflight.engine_health AS
 SELECT ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.status = 'queued'::text) AND (a.available_after <= ( SELECT pgflight._now() AS _now)))) AS ready,
    ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE (a.status = ANY (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text]))) AS leased,
    ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.status = ANY (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text])) AND (a.lease_expires_at < ( SELECT pgflight._now() AS _now)))) AS expired_not_reclaimed,
    ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.status = ANY (ARRAY['claimed'::text, 'running'::text])) AND (a.deadline_at < ( SELECT pgflight._now() AS _now)) AND (a.lease_expires_at >= ( SELECT pgflight._now() AS _now)))) AS over_deadline_heartbeating,
    ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE (a.status = ANY (ARRAY['awaiting_children'::text, 'awaiting_approval'::text]))) AS parked,
    ( SELECT count(*) AS count
           FROM pgflight.workers w
          WHERE ((w.stopped_at IS NULL) AND (w.last_seen_at > (( SELECT pgflight._now() AS _now) - '00:01:00'::interval)))) AS workers_alive;

ALTER TABLE pgflight.engine_health OWNER TO pgflight_owner;

-- Name: VIEW engine_health; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON VIEW pgflight.engine_health IS 'Gauges: ready, leased, expired leases not yet reclaimed, attempts over their deadline but still heartbeating (C15), parked, workers seen in the last 60 s.';

-- Name: events; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.events (
    id bigint NOT NULL,
    at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    run_id bigint,
    step_id bigint,
    attempt_id bigint,
    from_status text,
    to_status text,
    worker_id bigint,
    actor text,
    reason text NOT NULL,
    detail jsonb
);

ALTER TABLE pgflight.events OWNER TO pgflight_owner;

-- Name: TABLE events; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.events IS 'Append-only log of transitions. reason names the event: queued, claimed, started, succeeded, failed, retry_scheduled, lease_expired, deadline_exceeded, dead_lettered, released, cancel_requested, cancelled, children_spawned, parent_resumed, approval_requested, approval_decided, stale_result_rejected, retried, replayed, budget_exceeded.';

-- Name: events_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE pgflight.events ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: fencing_tokens; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

CREATE SEQUENCE pgflight.fencing_tokens
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER TABLE pgflight.fencing_tokens OWNER TO pgflight_owner;

-- Name: SEQUENCE fencing_tokens; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON SEQUENCE pgflight.fencing_tokens IS 'Fencing tokens: a fresh, strictly increasing value at every claim, across all attempts.';

-- Name: model_prices; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.model_prices (
    model text NOT NULL,
    input_usd_per_mtok numeric(12,6) NOT NULL,
    output_usd_per_mtok numeric(12,6) NOT NULL,
    cache_write_usd_per_mtok numeric(12,6) NOT NULL,
    cache_read_usd_per_mtok numeric(12,6) NOT NULL,
    as_of date NOT NULL,
    source text NOT NULL,
    CONSTRAINT model_is_not_blank CHECK ((btrim(model) <> ''::text)),
    CONSTRAINT prices_are_not_negative CHECK (((input_usd_per_mtok >= (0)::numeric) AND (output_usd_per_mtok >= (0)::numeric) AND (cache_write_usd_per_mtok >= (0)::numeric) AND (cache_read_usd_per_mtok >= (0)::numeric)))
);

ALTER TABLE pgflight.model_prices OWNER TO pgflight_owner;

-- Name: TABLE model_prices; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.model_prices IS 'USD per million tokens for each model (or model-name prefix; the longest matching prefix wins): input, output, cache_write (5-minute cache writes), cache_read (cache hits). as_of: the date the price was read; source: where.';

-- Name: run_events; Type: VIEW; Schema: pgflight; Owner: pgflight_owner

CREATE VIEW pgflight.run_events WITH (security_barrier='true') AS
 SELECT e.id,
    e.at,
    e.run_id,
    e.step_id,
    e.attempt_id,
    e.from_status,
    e.to_status,
    e.worker_id,
    e.actor,
    e.reason,
    e.detail
   FROM pgflight.events e
  WHERE ((( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces) IS NULL) OR (EXISTS ( SELECT
           FROM pgflight.runs r
          WHERE ((r.id = e.run_id) AND (r.workspace_id = ANY (COALESCE(( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces), '{}'::bigint[])))))));

ALTER TABLE pgflight.run_events OWNER TO pgflight_owner;

-- Name: VIEW run_events; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON VIEW pgflight.run_events IS 'The transition log.';

-- Name: workspaces; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.workspaces (
    id bigint NOT NULL,
    name text NOT NULL,
    daily_usd_cap numeric(14,6),
    max_run_usd numeric(14,6),
    options jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT daily_usd_cap_is_not_negative CHECK (((daily_usd_cap IS NULL) OR (daily_usd_cap >= (0)::numeric))),
    CONSTRAINT max_run_usd_is_not_negative CHECK (((max_run_usd IS NULL) OR (max_run_usd >= (0)::numeric))),
    CONSTRAINT name_is_not_blank CHECK (((btrim(name) <> ''::text) AND (length(name) <= 200)))
);

ALTER TABLE pgflight.workspaces OWNER TO pgflight_owner;

-- Name: TABLE workspaces; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.workspaces IS 'Tenants. daily_usd_cap: USD a workspace may spend per UTC day on model calls (null: no cap); max_run_usd: default USD cap of each run tree (null: none); options: further per-workspace defaults.';

-- Name: run_list; Type: VIEW; Schema: pgflight; Owner: pgflight_owner

CREATE VIEW pgflight.run_list WITH (security_barrier='true') AS
 SELECT r.id AS run_id,
    w.name AS workspace,
    r.recipe,
    r.status,
    r.idempotency_key,
    r.submitted_by,
    r.created_at,
    r.finished_at
   FROM (pgflight.runs r
     JOIN pgflight.workspaces w ON ((w.id = r.workspace_id)))
  WHERE ((( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces) IS NULL) OR (r.workspace_id = ANY (COALESCE(( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces), '{}'::bigint[]))));

ALTER TABLE pgflight.run_list OWNER TO pgflight_owner;

-- Name: VIEW run_list; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON VIEW pgflight.run_list IS 'Runs with their workspace name.';

-- Name: runs_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE pgflight.runs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: settings; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.settings (
    singleton boolean DEFAULT true NOT NULL,
    max_input_bytes bigint DEFAULT 16777216 NOT NULL,
    default_lease_s double precision DEFAULT 30 NOT NULL,
    default_max_attempts integer DEFAULT 3 NOT NULL,
    reclaim_in_claim integer DEFAULT 16 NOT NULL,
    allow_fake_clock boolean DEFAULT false NOT NULL,
    purge_after_s double precision DEFAULT 604800 NOT NULL,
    max_result_bytes bigint DEFAULT 16777216 NOT NULL,
    max_error_bytes bigint DEFAULT 1048576 NOT NULL,
    max_receipt_bytes bigint DEFAULT 1048576 NOT NULL,
    max_approval_request_bytes bigint DEFAULT 1048576 NOT NULL,
    max_name_bytes integer DEFAULT 200 NOT NULL,
    max_children_per_call integer DEFAULT 100000 NOT NULL,
    max_children_per_parent integer DEFAULT 1000000 NOT NULL,
    max_batch_size integer DEFAULT 10000 NOT NULL,
    max_lease_s double precision DEFAULT 86400 NOT NULL,
    max_live_workers_per_login integer DEFAULT 1000 NOT NULL,
    max_stale_writes_per_attempt integer DEFAULT 100 NOT NULL,
    CONSTRAINT caps_are_positive CHECK (((max_result_bytes > 0) AND (max_error_bytes > 0) AND (max_receipt_bytes > 0) AND (max_approval_request_bytes > 0) AND (max_name_bytes > 0) AND (max_children_per_call > 0) AND (max_children_per_parent > 0) AND (max_batch_size > 0) AND (max_lease_s > (0)::double precision) AND (max_live_workers_per_login > 0) AND (max_stale_writes_per_attempt > 0))),
    CONSTRAINT default_lease_is_positive CHECK ((default_lease_s > (0)::double precision)),
    CONSTRAINT default_max_attempts_is_positive CHECK ((default_max_attempts > 0)),
    CONSTRAINT max_input_bytes_is_positive CHECK ((max_input_bytes > 0)),
    CONSTRAINT reclaim_in_claim_is_not_negative CHECK ((reclaim_in_claim >= 0)),
    CONSTRAINT settings_has_one_row CHECK (singleton)
);

ALTER TABLE pgflight.settings OWNER TO pgflight_owner;

-- Name: TABLE settings; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.settings IS 'Engine-wide settings, exactly one row. max_input_bytes caps a step input (bytes of its JSON text); default_lease_s (seconds) and default_max_attempts apply when a run does not say; reclaim_in_claim bounds the expired leases each claim_batch call reclaims first; allow_fake_clock lets a session move pgflight._now() with SET pgflight.fake_now (tests only); purge_after_s is the retention of finished runs in seconds.';

-- Name: COLUMN settings.max_result_bytes; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_result_bytes IS 'Cap (bytes of JSON text) of a result or an agent trace block.';

-- Name: COLUMN settings.max_error_bytes; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_error_bytes IS 'Cap (bytes of JSON text) of fail_step''s error.';

-- Name: COLUMN settings.max_receipt_bytes; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_receipt_bytes IS 'Cap (bytes of JSON text) of record_effect''s receipt.';

-- Name: COLUMN settings.max_approval_request_bytes; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_approval_request_bytes IS 'Cap (bytes of JSON text) of request_approval''s request.';

-- Name: COLUMN settings.max_name_bytes; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_name_bytes IS 'Cap (bytes) of worker names, recipes, step, gate and effect keys, notes.';

-- Name: COLUMN settings.max_children_per_call; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_children_per_call IS 'Cap of children in one spawn_children call.';

-- Name: COLUMN settings.max_children_per_parent; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_children_per_parent IS 'Cap of children of one parent over all calls.';

-- Name: COLUMN settings.max_batch_size; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_batch_size IS 'Cap of claim_batch''s batch size.';

-- Name: COLUMN settings.max_lease_s; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_lease_s IS 'Cap (seconds) of a lease.';

-- Name: COLUMN settings.max_live_workers_per_login; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_live_workers_per_login IS 'Cap of registered, not deregistered workers of one login.';

-- Name: COLUMN settings.max_stale_writes_per_attempt; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_stale_writes_per_attempt IS 'Cap of stale_result_rejected events of one attempt.';

-- Name: step_attempts_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE pgflight.step_attempts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.step_attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: steps_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE pgflight.steps ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME pgflight.steps_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: traces; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.traces (
    id bigint NOT NULL,
    agent_run_id bigint NOT NULL,
    iteration integer NOT NULL,
    seq integer NOT NULL,
    role text NOT NULL,
    block_type text NOT NULL,
    tool_use_id text,
    tool_name text,
    content jsonb,
    status text DEFAULT 'completed'::text NOT NULL,
    tokens integer,
    attempt_id bigint,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    updated_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT block_type_is_known CHECK ((block_type = ANY (ARRAY['thinking'::text, 'text'::text, 'tool_use'::text, 'tool_result'::text, 'api_error'::text]))),
    CONSTRAINT iteration_is_not_negative CHECK (((iteration >= 0) AND (seq >= 0))),
    CONSTRAINT role_is_known CHECK ((role = ANY (ARRAY['user'::text, 'assistant'::text, 'system'::text]))),
    CONSTRAINT status_is_known CHECK ((status = ANY (ARRAY['completed'::text, 'in_flight'::text, 'interrupted'::text]))),
    CONSTRAINT tool_blocks_name_their_call CHECK (((block_type <> ALL (ARRAY['tool_use'::text, 'tool_result'::text])) OR (tool_use_id IS NOT NULL)))
);

ALTER TABLE pgflight.traces OWNER TO pgflight_owner;

-- Name: TABLE traces; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.traces IS 'Flight recorder, one row per block: role user|assistant|system, block_type thinking|text|tool_use|tool_result|api_error, content: the block as sent to or received from the Messages API, status completed|in_flight|interrupted (tool results), tokens: estimated tokens of the block (exact usage per call is in pgflight.costs), attempt_id: the attempt that wrote it.';

-- Name: traces_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE pgflight.traces ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.traces_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: workers_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE pgflight.workers ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.workers_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: workspace_grants; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.workspace_grants (
    login name NOT NULL,
    workspace_id bigint,
    lane text NOT NULL,
    granted_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    granted_by name DEFAULT SESSION_USER NOT NULL,
    CONSTRAINT lane_is_known CHECK ((lane = ANY (ARRAY['worker'::text, 'operator'::text, 'reader'::text])))
);

ALTER TABLE pgflight.workspace_grants OWNER TO pgflight_owner;

-- Name: TABLE workspace_grants; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.workspace_grants IS 'Tenancy: login may act in lane (worker, operator, reader; operator includes reader) on workspace_id (null: every workspace). Checked by pgflight._may; written by grant_workspace / revoke_workspace.';

-- Name: workspaces_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE pgflight.workspaces ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.workspaces_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: agent_runs agent_run_is_unique_per_step; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.agent_runs
    ADD CONSTRAINT agent_run_is_unique_per_step UNIQUE (step_id);

-- Name: agent_runs agent_runs_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.agent_runs
    ADD CONSTRAINT agent_runs_pkey PRIMARY KEY (id);

-- Name: approvals approvals_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.approvals
    ADD CONSTRAINT approvals_pkey PRIMARY KEY (id);

-- Name: step_attempts attempt_no_is_unique_per_step; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.step_attempts
    ADD CONSTRAINT attempt_no_is_unique_per_step UNIQUE (step_id, attempt_no);

-- Name: traces block_is_unique; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.traces
    ADD CONSTRAINT block_is_unique PRIMARY KEY (agent_run_id, iteration, seq);

-- Name: budgets budgets_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.budgets
    ADD CONSTRAINT budgets_pkey PRIMARY KEY (id);

-- Name: effects effect_key_is_unique_per_step; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.effects
    ADD CONSTRAINT effect_key_is_unique_per_step UNIQUE (step_id, effect_key);

-- Name: effects effects_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.effects
    ADD CONSTRAINT effects_pkey PRIMARY KEY (id);

-- Name: events events_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.events
    ADD CONSTRAINT events_pkey PRIMARY KEY (id);

-- Name: approvals gate_key_is_unique_per_step; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.approvals
    ADD CONSTRAINT gate_key_is_unique_per_step UNIQUE (step_id, gate_key);

-- Name: runs idempotency_key_is_unique_per_workspace; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.runs
    ADD CONSTRAINT idempotency_key_is_unique_per_workspace UNIQUE (workspace_id, idempotency_key);

-- Name: model_prices model_prices_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.model_prices
    ADD CONSTRAINT model_prices_pkey PRIMARY KEY (model);

-- Name: costs one_call_per_iteration; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.costs
    ADD CONSTRAINT one_call_per_iteration PRIMARY KEY (agent_run_id, iteration);

-- Name: workspace_grants one_grant_per_login_lane_workspace; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.workspace_grants
    ADD CONSTRAINT one_grant_per_login_lane_workspace UNIQUE NULLS NOT DISTINCT (login, lane, workspace_id);

-- Name: runs runs_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (id);

-- Name: settings settings_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.settings
    ADD CONSTRAINT settings_pkey PRIMARY KEY (singleton);

-- Name: step_attempts step_attempts_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.step_attempts
    ADD CONSTRAINT step_attempts_pkey PRIMARY KEY (id);

-- Name: steps steps_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.steps
    ADD CONSTRAINT steps_pkey PRIMARY KEY (id);

-- Name: workers workers_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.workers
    ADD CONSTRAINT workers_pkey PRIMARY KEY (id);

-- Name: workspaces workspaces_name_is_unique; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.workspaces
    ADD CONSTRAINT workspaces_name_is_unique UNIQUE (name);

-- Name: workspaces workspaces_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.workspaces
    ADD CONSTRAINT workspaces_pkey PRIMARY KEY (id);

-- Name: agent_runs_reserved_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX agent_runs_reserved_idx ON pgflight.agent_runs USING btree (reserved_attempt_id) WHERE (reserved_attempt_id IS NOT NULL);

-- Name: agent_runs_run_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX agent_runs_run_idx ON pgflight.agent_runs USING btree (run_id);

-- Name: approvals_expiring_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX approvals_expiring_idx ON pgflight.approvals USING btree (expires_at) WHERE (decision IS NULL);

-- Name: budgets_open_trees_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX budgets_open_trees_idx ON pgflight.budgets USING btree (id) WHERE ((scope <> 'workspace_day'::text) AND (exceeded_at IS NULL));

-- Name: budgets_run_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE UNIQUE INDEX budgets_run_idx ON pgflight.budgets USING btree (run_id) WHERE (scope = 'run'::text);

-- Name: budgets_step_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE UNIQUE INDEX budgets_step_idx ON pgflight.budgets USING btree (step_id) WHERE (scope = 'step'::text);

-- Name: budgets_workspace_day_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE UNIQUE INDEX budgets_workspace_day_idx ON pgflight.budgets USING btree (workspace_id, day) WHERE (scope = 'workspace_day'::text);

-- Name: costs_run_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX costs_run_idx ON pgflight.costs USING btree (run_id);

-- Name: events_run_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX events_run_idx ON pgflight.events USING btree (run_id, id);

-- Name: runs_created_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX runs_created_idx ON pgflight.runs USING btree (created_at);

-- Name: step_attempts_deadline_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX step_attempts_deadline_idx ON pgflight.step_attempts USING btree (deadline_at) WHERE ((status = ANY (ARRAY['claimed'::text, 'running'::text])) AND (deadline_at IS NOT NULL));

-- Name: step_attempts_expiring_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX step_attempts_expiring_idx ON pgflight.step_attempts USING btree (lease_expires_at) WHERE (status = ANY (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text]));

-- Name: step_attempts_one_live_per_step_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE UNIQUE INDEX step_attempts_one_live_per_step_idx ON pgflight.step_attempts USING btree (step_id) WHERE (status = ANY (ARRAY['queued'::text, 'claimed'::text, 'running'::text, 'cancel_requested'::text, 'awaiting_children'::text, 'awaiting_approval'::text]));

-- Name: step_attempts_parked_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX step_attempts_parked_idx ON pgflight.step_attempts USING btree (status, step_id) WHERE (status = ANY (ARRAY['awaiting_children'::text, 'awaiting_approval'::text]));

-- Name: step_attempts_ready_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX step_attempts_ready_idx ON pgflight.step_attempts USING btree (priority DESC, available_after, id) WHERE (status = 'queued'::text);

-- Name: steps_key_is_unique_under_parent_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE UNIQUE INDEX steps_key_is_unique_under_parent_idx ON pgflight.steps USING btree (parent_id, step_key) WHERE (parent_id IS NOT NULL);

-- Name: steps_run_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX steps_run_idx ON pgflight.steps USING btree (run_id);

-- Name: traces_tool_call_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE UNIQUE INDEX traces_tool_call_idx ON pgflight.traces USING btree (agent_run_id, tool_use_id, block_type) WHERE (tool_use_id IS NOT NULL);

-- Name: workers_login_live_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX workers_login_live_idx ON pgflight.workers USING btree (login) WHERE (stopped_at IS NULL);

-- Name: agent_runs agent_runs_run_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.agent_runs
    ADD CONSTRAINT agent_runs_run_id_fkey FOREIGN KEY (run_id) REFERENCES pgflight.runs(id) ON DELETE CASCADE;

-- Name: agent_runs agent_runs_step_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.agent_runs
    ADD CONSTRAINT agent_runs_step_id_fkey FOREIGN KEY (step_id) REFERENCES pgflight.steps(id) ON DELETE CASCADE;

-- Name: approvals approvals_step_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.approvals
    ADD CONSTRAINT approvals_step_id_fkey FOREIGN KEY (step_id) REFERENCES pgflight.steps(id) ON DELETE CASCADE;

-- Name: budgets budgets_run_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.budgets
    ADD CONSTRAINT budgets_run_id_fkey FOREIGN KEY (run_id) REFERENCES pgflight.runs(id) ON DELETE CASCADE;

-- Name: budgets budgets_step_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.budgets
    ADD CONSTRAINT budgets_step_id_fkey FOREIGN KEY (step_id) REFERENCES pgflight.steps(id) ON DELETE CASCADE;

-- Name: budgets budgets_workspace_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.budgets
    ADD CONSTRAINT budgets_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

-- Name: costs costs_agent_run_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.costs
    ADD CONSTRAINT costs_agent_run_id_fkey FOREIGN KEY (agent_run_id) REFERENCES pgflight.agent_runs(id) ON DELETE CASCADE;

-- Name: effects effects_step_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.effects
    ADD CONSTRAINT effects_step_id_fkey FOREIGN KEY (step_id) REFERENCES pgflight.steps(id) ON DELETE CASCADE;

-- Name: runs runs_workspace_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.runs
    ADD CONSTRAINT runs_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id);

-- Name: step_attempts step_attempts_step_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.step_attempts
    ADD CONSTRAINT step_attempts_step_id_fkey FOREIGN KEY (step_id) REFERENCES pgflight.steps(id) ON DELETE CASCADE;

-- Name: steps steps_parent_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.steps
    ADD CONSTRAINT steps_parent_id_fkey FOREIGN KEY (parent_id) REFERENCES pgflight.steps(id) ON DELETE CASCADE;

-- Name: steps steps_run_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.steps
    ADD CONSTRAINT steps_run_id_fkey FOREIGN KEY (run_id) REFERENCES pgflight.runs(id) ON DELETE CASCADE;

-- Name: traces traces_agent_run_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.traces
    ADD CONSTRAINT traces_agent_run_id_fkey FOREIGN KEY (agent_run_id) REFERENCES pgflight.agent_runs(id) ON DELETE CASCADE;

-- Name: workspace_grants workspace_grants_workspace_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.workspace_grants
    ADD CONSTRAINT workspace_grants_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

-- Name: SCHEMA pgflight; Type: ACL; Schema: -; Owner: pgflight_owner

GRANT USAGE ON SCHEMA pgflight TO pgflight_worker;
GRANT USAGE ON SCHEMA pgflight TO pgflight_operator;
GRANT USAGE ON SCHEMA pgflight TO pgflight_reader;

-- Name: FUNCTION _actor_note(p_note text, p_actor text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._actor_note(p_note text, p_actor text) FROM PUBLIC;

-- Name: FUNCTION _now(); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._now() FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._now() TO pgflight_worker;
GRANT ALL ON FUNCTION pgflight._now() TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight._now() TO pgflight_reader;

-- Name: FUNCTION _agent_fence(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_operation text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._agent_fence(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_operation text) FROM PUBLIC;

-- Name: FUNCTION _backoff_s(p_failed integer, p_backoff jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._backoff_s(p_failed integer, p_backoff jsonb) FROM PUBLIC;

-- Name: FUNCTION _bad_child_options(p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._bad_child_options(p_options jsonb) FROM PUBLIC;

-- Name: FUNCTION _call_budget_ids(p_run pgflight.agent_runs, p_now timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._call_budget_ids(p_run pgflight.agent_runs, p_now timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _cancel_steps(p_step_ids bigint[], p_actor text, p_reason text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._cancel_steps(p_step_ids bigint[], p_actor text, p_reason text) FROM PUBLIC;

-- Name: FUNCTION _cancel_tree(p_run_id bigint, p_step_id bigint, p_actor text, p_reason text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._cancel_tree(p_run_id bigint, p_step_id bigint, p_actor text, p_reason text) FROM PUBLIC;

-- Name: FUNCTION _complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_now timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_now timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _decide(p_gate_id bigint, p_decision text, p_actor text, p_note text, p_reason text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._decide(p_gate_id bigint, p_decision text, p_actor text, p_note text, p_reason text) FROM PUBLIC;

-- Name: FUNCTION _event(p_run_id bigint, p_step_id bigint, p_attempt_id bigint, p_from text, p_to text, p_worker_id bigint, p_reason text, p_actor text, p_detail jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._event(p_run_id bigint, p_step_id bigint, p_attempt_id bigint, p_from text, p_to text, p_worker_id bigint, p_reason text, p_actor text, p_detail jsonb) FROM PUBLIC;

-- Name: FUNCTION _fail_attempt(p_attempt_id bigint, p_from text, p_status text, p_error jsonb, p_retryable boolean, p_retry_after_s double precision, p_reason text, p_actor text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._fail_attempt(p_attempt_id bigint, p_from text, p_status text, p_error jsonb, p_retryable boolean, p_retry_after_s double precision, p_reason text, p_actor text) FROM PUBLIC;

-- Name: FUNCTION _fake_now(p_value text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._fake_now(p_value text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._fake_now(p_value text) TO pgflight_worker;
GRANT ALL ON FUNCTION pgflight._fake_now(p_value text) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight._fake_now(p_value text) TO pgflight_reader;

-- Name: FUNCTION _iteration_refusal(p_run pgflight.agent_runs, p_iteration integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._iteration_refusal(p_run pgflight.agent_runs, p_iteration integer) FROM PUBLIC;

-- Name: FUNCTION _lane_workspaces(p_lane text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._lane_workspaces(p_lane text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._lane_workspaces(p_lane text) TO pgflight_worker;
GRANT ALL ON FUNCTION pgflight._lane_workspaces(p_lane text) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight._lane_workspaces(p_lane text) TO pgflight_reader;

-- Name: FUNCTION _lock_held(p_attempt_id bigint, p_token bigint, p_operation text, p_with_cancel_requested boolean); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._lock_held(p_attempt_id bigint, p_token bigint, p_operation text, p_with_cancel_requested boolean) FROM PUBLIC;

-- Name: FUNCTION _may(p_lane text, p_workspace_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) TO pgflight_worker;
GRANT ALL ON FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) TO pgflight_reader;

-- Name: FUNCTION _move_budget(p_ids bigint[], p_reserve numeric, p_spend numeric, p_release numeric, p_check boolean, p_now timestamp with time zone, p_what text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._move_budget(p_ids bigint[], p_reserve numeric, p_spend numeric, p_release numeric, p_check boolean, p_now timestamp with time zone, p_what text) FROM PUBLIC;

-- Name: FUNCTION _notify_ready(); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._notify_ready() FROM PUBLIC;

-- Name: FUNCTION _opt_num(p_options jsonb, p_key text, p_default double precision); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._opt_num(p_options jsonb, p_key text, p_default double precision) FROM PUBLIC;

-- Name: FUNCTION _opt_text(p_options jsonb, p_key text, p_default text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._opt_text(p_options jsonb, p_key text, p_default text) FROM PUBLIC;

-- Name: FUNCTION _price_usd(p_model text, p_usage jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._price_usd(p_model text, p_usage jsonb) FROM PUBLIC;

-- Name: FUNCTION _raise_budget_exceeded(p_refusal jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._raise_budget_exceeded(p_refusal jsonb) FROM PUBLIC;

-- Name: FUNCTION _reclaim(p_now timestamp with time zone, p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._reclaim(p_now timestamp with time zone, p_limit integer) FROM PUBLIC;

-- Name: FUNCTION _record_stale(p_attempt_id bigint, p_token bigint, p_operation text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._record_stale(p_attempt_id bigint, p_token bigint, p_operation text) FROM PUBLIC;

-- Name: FUNCTION _reject_write(p_attempt_id bigint, p_token bigint, p_operation text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._reject_write(p_attempt_id bigint, p_token bigint, p_operation text) FROM PUBLIC;

-- Name: FUNCTION _release_reservation(p_agent_run_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._release_reservation(p_agent_run_id bigint) FROM PUBLIC;

-- Name: FUNCTION _reopen_step(p_step_id bigint, p_actor text, p_reason text, p_note text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._reopen_step(p_step_id bigint, p_actor text, p_reason text, p_note text) FROM PUBLIC;

-- Name: FUNCTION _require_cap(p_cap text, p_limit double precision, p_value double precision, p_what text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._require_cap(p_cap text, p_limit double precision, p_value double precision, p_what text) FROM PUBLIC;

-- Name: FUNCTION _require_lane(p_lane text, p_workspace_id bigint, p_operation text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._require_lane(p_lane text, p_workspace_id bigint, p_operation text) FROM PUBLIC;

-- Name: FUNCTION _require_lane_on_run(p_lane text, p_run_id bigint, p_operation text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._require_lane_on_run(p_lane text, p_run_id bigint, p_operation text) FROM PUBLIC;

-- Name: FUNCTION _require_lane_on_step(p_lane text, p_step_id bigint, p_operation text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._require_lane_on_step(p_lane text, p_step_id bigint, p_operation text) FROM PUBLIC;

-- Name: FUNCTION _require_own_attempt(p_attempt_id bigint, p_token bigint, p_operation text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._require_own_attempt(p_attempt_id bigint, p_token bigint, p_operation text) FROM PUBLIC;

-- Name: FUNCTION _require_positive(p_name text, p_value double precision); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._require_positive(p_name text, p_value double precision) FROM PUBLIC;

-- Name: FUNCTION _reserve(p_run pgflight.agent_runs, p_attempt_id bigint, p_iteration integer, p_est_usd numeric, p_now timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._reserve(p_run pgflight.agent_runs, p_attempt_id bigint, p_iteration integer, p_est_usd numeric, p_now timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _step_finished(p_step_id bigint, p_final text, p_actor text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._step_finished(p_step_id bigint, p_final text, p_actor text) FROM PUBLIC;

-- Name: FUNCTION _steps_finished(p_step_ids bigint[], p_finals text[], p_actor text, p_now timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._steps_finished(p_step_ids bigint[], p_finals text[], p_actor text, p_now timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _store_tool_results(p_run_id bigint, p_attempt_id bigint, p_results jsonb, p_now timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._store_tool_results(p_run_id bigint, p_attempt_id bigint, p_results jsonb, p_now timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _tree_steps(p_run_id bigint, p_step_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._tree_steps(p_run_id bigint, p_step_id bigint) FROM PUBLIC;

-- Name: FUNCTION _wake(p_step_id bigint, p_reason text, p_actor text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._wake(p_step_id bigint, p_reason text, p_actor text) FROM PUBLIC;

-- Name: FUNCTION agent_run_of(p_step_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.agent_run_of(p_step_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.agent_run_of(p_step_id bigint) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.agent_run_of(p_step_id bigint) TO pgflight_reader;

-- Name: FUNCTION agent_runs_by_status(p_status text, p_after bigint, p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.agent_runs_by_status(p_status text, p_after bigint, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.agent_runs_by_status(p_status text, p_after bigint, p_limit integer) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.agent_runs_by_status(p_status text, p_after bigint, p_limit integer) TO pgflight_reader;

-- Name: FUNCTION agent_transcript(p_agent_run_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.agent_transcript(p_agent_run_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.agent_transcript(p_agent_run_id bigint) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.agent_transcript(p_agent_run_id bigint) TO pgflight_reader;

-- Name: FUNCTION approve(p_step_id bigint, p_decision text, p_actor text, p_note text, p_gate_key text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.approve(p_step_id bigint, p_decision text, p_actor text, p_note text, p_gate_key text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.approve(p_step_id bigint, p_decision text, p_actor text, p_note text, p_gate_key text) TO pgflight_operator;

-- Name: FUNCTION begin_agent_run(p_attempt_id bigint, p_token bigint, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.begin_agent_run(p_attempt_id bigint, p_token bigint, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.begin_agent_run(p_attempt_id bigint, p_token bigint, p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION cancel_run(p_run_id bigint, p_actor text, p_reason text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.cancel_run(p_run_id bigint, p_actor text, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.cancel_run(p_run_id bigint, p_actor text, p_reason text) TO pgflight_operator;

-- Name: FUNCTION cancel_step(p_step_id bigint, p_actor text, p_reason text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.cancel_step(p_step_id bigint, p_actor text, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.cancel_step(p_step_id bigint, p_actor text, p_reason text) TO pgflight_operator;

-- Name: FUNCTION children_results(p_step_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.children_results(p_step_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.children_results(p_step_id bigint) TO pgflight_worker;
GRANT ALL ON FUNCTION pgflight.children_results(p_step_id bigint) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.children_results(p_step_id bigint) TO pgflight_reader;

-- Name: FUNCTION claim_batch(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.claim_batch(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.claim_batch(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]) TO pgflight_worker;

-- Name: FUNCTION complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb) TO pgflight_worker;

-- Name: FUNCTION complete_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text, p_result jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.complete_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text, p_result jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.complete_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text, p_result jsonb) TO pgflight_worker;

-- Name: FUNCTION complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_results jsonb, p_next_iteration integer, p_est_usd numeric); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_results jsonb, p_next_iteration integer, p_est_usd numeric) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_results jsonb, p_next_iteration integer, p_est_usd numeric) TO pgflight_worker;

-- Name: FUNCTION create_workspace(p_name text, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.create_workspace(p_name text, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.create_workspace(p_name text, p_options jsonb) TO pgflight_operator;

-- Name: FUNCTION deregister_worker(p_worker_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.deregister_worker(p_worker_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.deregister_worker(p_worker_id bigint) TO pgflight_worker;

-- Name: FUNCTION enforce_budgets(p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.enforce_budgets(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.enforce_budgets(p_limit integer) TO pgflight_operator;

-- Name: FUNCTION expire_approvals(p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.expire_approvals(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.expire_approvals(p_limit integer) TO pgflight_operator;

-- Name: FUNCTION fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION find_effect(p_step_id bigint, p_key text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.find_effect(p_step_id bigint, p_key text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.find_effect(p_step_id bigint, p_key text) TO pgflight_worker;

-- Name: FUNCTION grant_workspace(p_login name, p_workspace text, p_lane text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.grant_workspace(p_login name, p_workspace text, p_lane text) FROM PUBLIC;

-- Name: FUNCTION heartbeat(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.heartbeat(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[]) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.heartbeat(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[]) TO pgflight_worker;

-- Name: FUNCTION install_schedules(p_interval_s integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.install_schedules(p_interval_s integer) FROM PUBLIC;

-- Name: FUNCTION load_transcript(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.load_transcript(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.load_transcript(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint) TO pgflight_worker;

-- Name: FUNCTION mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text) TO pgflight_worker;

-- Name: FUNCTION price_usd(p_model text, p_usage jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) TO pgflight_worker;
GRANT ALL ON FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) TO pgflight_reader;

-- Name: FUNCTION purge_finished(p_older_than_s double precision, p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.purge_finished(p_older_than_s double precision, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.purge_finished(p_older_than_s double precision, p_limit integer) TO pgflight_operator;

-- Name: FUNCTION reclaim_expired(p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.reclaim_expired(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.reclaim_expired(p_limit integer) TO pgflight_operator;

-- Name: FUNCTION record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb) TO pgflight_worker;

-- Name: FUNCTION record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text, p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION record_stale_write(p_attempt_id bigint, p_token bigint, p_operation text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.record_stale_write(p_attempt_id bigint, p_token bigint, p_operation text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.record_stale_write(p_attempt_id bigint, p_token bigint, p_operation text) TO pgflight_worker;

-- Name: FUNCTION record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_role text, p_block_type text, p_content jsonb, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_role text, p_block_type text, p_content jsonb, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_role text, p_block_type text, p_content jsonb, p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION register_worker(p_name text, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.register_worker(p_name text, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.register_worker(p_name text, p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION release_step(p_attempt_id bigint, p_token bigint, p_reason text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.release_step(p_attempt_id bigint, p_token bigint, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.release_step(p_attempt_id bigint, p_token bigint, p_reason text) TO pgflight_worker;

-- Name: FUNCTION replay_from(p_step_id bigint, p_actor text, p_note text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.replay_from(p_step_id bigint, p_actor text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.replay_from(p_step_id bigint, p_actor text, p_note text) TO pgflight_operator;

-- Name: FUNCTION request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb, p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION reserve_budget(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_est_usd numeric); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.reserve_budget(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_est_usd numeric) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.reserve_budget(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_est_usd numeric) TO pgflight_worker;

-- Name: FUNCTION retry_step(p_step_id bigint, p_actor text, p_note text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.retry_step(p_step_id bigint, p_actor text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.retry_step(p_step_id bigint, p_actor text, p_note text) TO pgflight_operator;

-- Name: FUNCTION revoke_workspace(p_login name, p_workspace text, p_lane text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.revoke_workspace(p_login name, p_workspace text, p_lane text) FROM PUBLIC;

-- Name: FUNCTION run_audit(p_run_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.run_audit(p_run_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.run_audit(p_run_id bigint) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.run_audit(p_run_id bigint) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.run_audit(p_run_id bigint) TO pgflight_worker;

-- Name: FUNCTION run_status(p_run_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.run_status(p_run_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.run_status(p_run_id bigint) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.run_status(p_run_id bigint) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.run_status(p_run_id bigint) TO pgflight_worker;

-- Name: FUNCTION run_sweeps(); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.run_sweeps() FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.run_sweeps() TO pgflight_operator;

-- Name: FUNCTION spawn_children(p_attempt_id bigint, p_token bigint, p_children jsonb, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.spawn_children(p_attempt_id bigint, p_token bigint, p_children jsonb, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.spawn_children(p_attempt_id bigint, p_token bigint, p_children jsonb, p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION start_step(p_attempt_id bigint, p_token bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.start_step(p_attempt_id bigint, p_token bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.start_step(p_attempt_id bigint, p_token bigint) TO pgflight_worker;

-- Name: FUNCTION submit_run(p_workspace text, p_recipe text, p_input jsonb, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.submit_run(p_workspace text, p_recipe text, p_input jsonb, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.submit_run(p_workspace text, p_recipe text, p_input jsonb, p_options jsonb) TO pgflight_operator;

-- Name: PROCEDURE sweep_loop(IN p_duration_s double precision, IN p_interval_s double precision); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON PROCEDURE pgflight.sweep_loop(IN p_duration_s double precision, IN p_interval_s double precision) FROM PUBLIC;
GRANT ALL ON PROCEDURE pgflight.sweep_loop(IN p_duration_s double precision, IN p_interval_s double precision) TO pgflight_cron;

-- Name: FUNCTION uninstall_schedules(); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.uninstall_schedules() FROM PUBLIC;

-- Name: FUNCTION wake_parents(p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.wake_parents(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.wake_parents(p_limit integer) TO pgflight_operator;

-- Name: TABLE attempts; Type: ACL; Schema: pgflight; Owner: pgflight_owner

GRANT SELECT ON TABLE pgflight.attempts TO pgflight_reader;
GRANT SELECT ON TABLE pgflight.attempts TO pgflight_operator;

-- Name: TABLE step_status; Type: ACL; Schema: pgflight; Owner: pgflight_owner

GRANT SELECT ON TABLE pgflight.step_status TO pgflight_reader;
GRANT SELECT ON TABLE pgflight.step_status TO pgflight_operator;

-- Name: TABLE dead_letters; Type: ACL; Schema: pgflight; Owner: pgflight_owner

GRANT SELECT ON TABLE pgflight.dead_letters TO pgflight_reader;
GRANT SELECT ON TABLE pgflight.dead_letters TO pgflight_operator;

-- Name: TABLE engine_health; Type: ACL; Schema: pgflight; Owner: pgflight_owner

GRANT SELECT ON TABLE pgflight.engine_health TO pgflight_reader;
GRANT SELECT ON TABLE pgflight.engine_health TO pgflight_operator;

-- Name: TABLE run_events; Type: ACL; Schema: pgflight; Owner: pgflight_owner

GRANT SELECT ON TABLE pgflight.run_events TO pgflight_reader;
GRANT SELECT ON TABLE pgflight.run_events TO pgflight_operator;

-- Name: TABLE run_list; Type: ACL; Schema: pgflight; Owner: pgflight_owner

GRANT SELECT ON TABLE pgflight.run_list TO pgflight_reader;
GRANT SELECT ON TABLE pgflight.run_list TO pgflight_operator;
