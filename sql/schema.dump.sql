-- pg_dump major version: 15

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
    reserved_call_out boolean DEFAULT false NOT NULL,
    forked_from bigint,
    forked_at integer,
    CONSTRAINT caps_are_positive CHECK (((max_iterations > 0) AND (max_tool_calls >= 0))),
    CONSTRAINT fork_names_its_origin_and_iteration CHECK ((((forked_from IS NULL) = (forked_at IS NULL)) AND (COALESCE(forked_at, 1) >= 1))),
    CONSTRAINT reservation_is_whole CHECK (
CASE
    WHEN (reserved_iteration IS NULL) THEN ((reserved_usd = 0.0) AND (reserved_budget_ids IS NULL))
    ELSE (reserved_attempt_id IS NOT NULL)
END),
    CONSTRAINT totals_are_not_negative CHECK (((LEAST(iterations, tool_calls) >= 0) AND (usd >= 0.0)))
)
WITH (fillfactor='80');

ALTER TABLE pgflight.agent_runs OWNER TO pgflight_owner;

-- Name: TABLE agent_runs; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.agent_runs IS 'One per agent step, across its attempts. max_iterations / max_tool_calls: per-agent caps (model calls, tool calls). Totals: iterations, tool_calls, tokens, usd (USD). budget_ids: the tree budgets (pgflight.budgets: the run, every ancestor agent with a cap, this agent) that bind its spend. reserved_*: the USD reserved for the model call in flight (attempt, iteration, budgets), replaced by the actual cost when record_model_call settles it, released by enforce_budgets when the attempt lapsed.';

-- Name: COLUMN agent_runs.reserved_attempt_id; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.agent_runs.reserved_attempt_id IS 'The attempt that last reserved (kept after the reservation is settled, so iterations update the row HOT); the reservation is held while reserved_iteration is set. Cleared by enforce_budgets once the attempt is no longer leased.';

-- Name: COLUMN agent_runs.reserved_call_out; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.agent_runs.reserved_call_out IS 'true while the held reservation is for a call that is about to be made or is out (its outcome is unknown until recorded); false for a reservation taken ahead of its call. A reservation released with its call out is charged as a costs row marked unknown_outcome.';

-- Name: COLUMN agent_runs.forked_from; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.agent_runs.forked_from IS 'The agent run this one was forked from (fork_agent); null: not a fork.';

-- Name: COLUMN agent_runs.forked_at; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.agent_runs.forked_at IS 'Of a fork: the first iteration it asked of the model itself (iterations before it are the original''s, reused at USD 0).';

-- Name: _agent_fence(bigint, bigint, bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._agent_fence(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_operation text) RETURNS pgflight.agent_runs
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

ALTER FUNCTION pgflight._agent_fence(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_operation text) OWNER TO pgflight_owner;

-- Name: FUNCTION _agent_fence(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_operation text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._agent_fence(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_operation text) IS 'Internal: fence an agent write by (attempt, token); returns the agent run, locked. ZF001, ZF002, ZF003.';

-- Name: _backend_started_at(integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_privileged

CREATE FUNCTION pgflight._backend_started_at(p_pid integer) RETURNS timestamp with time zone
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select a.backend_start from pg_catalog.pg_stat_activity a where a.pid = p_pid
$$;

ALTER FUNCTION pgflight._backend_started_at(p_pid integer) OWNER TO pgflight_privileged;

-- Name: FUNCTION _backend_started_at(p_pid integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_privileged

COMMENT ON FUNCTION pgflight._backend_started_at(p_pid integer) IS 'Internal: pg_stat_activity.backend_start of backend p_pid (null when none); owner-only.';

-- Name: _backoff_s(integer, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._backoff_s(p_failed integer, p_backoff jsonb) RETURNS double precision
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_base double precision := pgflight._opt_clamped(p_backoff, 'base_s', 1, 0, 86400);
  v_factor double precision := pgflight._opt_clamped(p_backoff, 'factor', 2, 1, 100);
  v_max double precision := pgflight._opt_clamped(p_backoff, 'max_s', 300, 0, 2592000);
  v_jitter double precision := pgflight._opt_clamped(p_backoff, 'jitter', 0.2, 0, 1);
  v_n double precision := greatest(coalesce(p_failed, 1) - 1, 0);
  v_delay double precision;
begin
  if v_base <= 0 or v_max <= 0 then
    v_delay := 0;
  elsif ln(v_base) + v_n * ln(v_factor) >= ln(v_max) then
    v_delay := v_max;
  else
    v_delay := v_base * power(v_factor, v_n);
  end if;
  return least(greatest(v_delay * (1 + v_jitter * (2 * random() - 1)), 0), pgflight._limit('delay_s'));
end
$$;

ALTER FUNCTION pgflight._backoff_s(p_failed integer, p_backoff jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION _backoff_s(p_failed integer, p_backoff jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._backoff_s(p_failed integer, p_backoff jsonb) IS 'Internal: retry delay in seconds, min(max_s, base_s * factor^(n-1)) times 1 +/- jitter; saturates, never raises.';

-- Name: _bad_child_flow(jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._bad_child_flow(p_options jsonb) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._concurrency_option(coalesce(p_options, '{}'));
  return false;
exception when invalid_parameter_value then
  return true;
end
$$;

ALTER FUNCTION pgflight._bad_child_flow(p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION _bad_child_flow(p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._bad_child_flow(p_options jsonb) IS 'Internal: true when a child''s concurrency_key / concurrency_limit options are malformed.';

-- Name: _bad_child_options(jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._bad_child_options(p_options jsonb) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._check_options('spawn_children child', p_options);
  return false;
exception when sqlstate '22023' then
  return true;
end
$$;

ALTER FUNCTION pgflight._bad_child_options(p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION _bad_child_options(p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._bad_child_options(p_options jsonb) IS 'Internal: true when a child''s options object fails _check_options.';

-- Name: _bad_option(text, text, jsonb, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._bad_option(p_scope text, p_key text, p_value jsonb, p_expected text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  raise exception using
    errcode = '22023',
    message = format('option %s of %s must be %s', p_key, p_scope, p_expected),
    detail  = format('got %s', left(coalesce(p_value::text, 'NULL'), 200)),
    hint    = format('See docs/options.md: %s.%s is %s.', p_scope, p_key, p_expected);
end
$$;

ALTER FUNCTION pgflight._bad_option(p_scope text, p_key text, p_value jsonb, p_expected text) OWNER TO pgflight_owner;

-- Name: FUNCTION _bad_option(p_scope text, p_key text, p_value jsonb, p_expected text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._bad_option(p_scope text, p_key text, p_value jsonb, p_expected text) IS 'Internal: raise 22023 naming the option, its value (DETAIL) and its documented range (HINT).';

-- Name: _bucket_tokens(double precision, timestamp with time zone, double precision, double precision, timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._bucket_tokens(p_tokens double precision, p_refilled_at timestamp with time zone, p_rate double precision, p_burst double precision, p_now timestamp with time zone) RETURNS double precision
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case when p_tokens is null or p_refilled_at is null then p_burst
              else least(p_burst, p_tokens + greatest(0, extract(epoch from p_now - p_refilled_at)::double precision) * p_rate)
         end
$$;

ALTER FUNCTION pgflight._bucket_tokens(p_tokens double precision, p_refilled_at timestamp with time zone, p_rate double precision, p_burst double precision, p_now timestamp with time zone) OWNER TO pgflight_owner;

-- Name: FUNCTION _bucket_tokens(p_tokens double precision, p_refilled_at timestamp with time zone, p_rate double precision, p_burst double precision, p_now timestamp with time zone); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._bucket_tokens(p_tokens double precision, p_refilled_at timestamp with time zone, p_rate double precision, p_burst double precision, p_now timestamp with time zone) IS 'Internal: a token bucket''s level at p_now.';

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

-- Name: _cascade_root(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._cascade_root(p_step_id bigint) RETURNS bigint
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_id bigint := p_step_id;
  v_top bigint;
  v_step record;
begin
  loop
    select s.parent_id into v_id from pgflight.steps s where s.id = v_id;
    exit when v_id is null;
    select s.fail_fast, s.parent_id into v_step from pgflight.steps s where s.id = v_id;
    exit when not coalesce(v_step.fail_fast, false)
           or not exists (select from pgflight.step_attempts a
                           where a.step_id = v_id and a.status = 'awaiting_children');
    v_top := v_id;
  end loop;
  if v_top is null and exists (select from pgflight.steps c where c.parent_id = p_step_id) then
    v_top := p_step_id;
  end if;
  return v_top;
end
$$;

ALTER FUNCTION pgflight._cascade_root(p_step_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION _cascade_root(p_step_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._cascade_root(p_step_id bigint) IS 'Internal: root of the subtree an unsuccessful end of this step may cancel (a waiting fail-fast ancestor, else the step when it has children), or null.';

-- Name: _check_arg(text, double precision, double precision, double precision); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._check_arg(p_name text, p_value double precision, p_min double precision, p_max double precision) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_value is null or p_value = 'NaN'::double precision or p_value < p_min or p_value > p_max then
    raise exception using
      errcode = '22023',
      message = format('%s must be a number from %s to %s', p_name, p_min, p_max),
      detail  = format('got %s', coalesce(p_value::text, 'NULL')),
      hint    = format('Pass a finite %s within [%s, %s].', p_name, p_min, p_max);
  end if;
end
$$;

ALTER FUNCTION pgflight._check_arg(p_name text, p_value double precision, p_min double precision, p_max double precision) OWNER TO pgflight_owner;

-- Name: FUNCTION _check_arg(p_name text, p_value double precision, p_min double precision, p_max double precision); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._check_arg(p_name text, p_value double precision, p_min double precision, p_max double precision) IS 'Internal: 22023 unless the argument is a number within [min, max].';

-- Name: _check_limit(integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._check_limit(p_limit integer) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_limit < 0 then
    perform pgflight._check_arg('limit', p_limit, 0, 2147483647);
  end if;
  return p_limit;
end
$$;

ALTER FUNCTION pgflight._check_limit(p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION _check_limit(p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._check_limit(p_limit integer) IS 'Internal: a row limit, NULL or >= 0, else 22023.';

-- Name: _check_options(text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._check_options(p_scope text, p_options jsonb) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v record;
  v_out jsonb := '{}';
  v_val jsonb;
  v_type text;
  v_n numeric;
  v_ts timestamptz;
  v_item jsonb;
  -- submit_run and each child of spawn_children ("spawn_children child 3") take the step options
  v_step_scope boolean := p_scope = 'submit_run' or starts_with(p_scope, 'spawn_children child');
  v_map jsonb;
  v_kind text;
  v_min numeric;
  v_max numeric;
begin
  if p_options is null or p_options = '{}' then
    return '{}';
  end if;
  v_map := pgflight._option_map();  -- a constant of this expression's cached plan
  if jsonb_typeof(p_options) <> 'object' then
    raise exception using errcode = '22023', message = format('options of %s must be a JSON object', p_scope),
      detail = format('got a JSON %s', jsonb_typeof(p_options)),
      hint = 'See docs/options.md for the keys each function takes.';
  end if;
  for v in
    select e.key, e.value,
           coalesce(v_map -> (p_scope || '.' || e.key), case when v_step_scope then v_map -> ('step.' || e.key) end) as spec
      from jsonb_each(p_options) as e(key, value)
  loop
    if v.spec is null then
      raise exception using errcode = '22023', message = format('unknown option %s for %s', v.key, p_scope),
        detail = format('known options: %s',
                        (select string_agg(s.key, ', ' order by s.key) from pgflight._option_spec() s
                          where s.scope = p_scope or (s.scope = 'step' and v_step_scope))),
        hint = 'Check the spelling; see docs/options.md.';
    end if;
    v_kind := v.spec ->> 'kind';
    v_min := (v.spec ->> 'min')::numeric;
    v_max := (v.spec ->> 'max')::numeric;
    v_val := v.value;
    v_type := jsonb_typeof(v_val);
    continue when v_type = 'null';
    case v_kind
      when 'boolean' then
        if v_type <> 'boolean' then
          perform pgflight._bad_option(p_scope, v.key, v_val, 'a JSON boolean (true or false)');
        end if;
      when 'number' then
        if (case when v_type = 'number' then v_val::numeric not between v_min and v_max else true end) then
          perform pgflight._bad_option(p_scope, v.key, v_val,
                                       format('a JSON number from %s to %s', v_min, v_max));
        end if;
      when 'integer' then
        -- 3 and 3.0 are both 3; 1.5 is refused, never rounded
        v_n := case when v_type = 'number' then v_val::numeric end;
        if v_n is null or v_n <> trunc(v_n) or v_n not between v_min and v_max then
          perform pgflight._bad_option(p_scope, v.key, v_val,
                                       format('an integer from %s to %s', v_min, v_max));
        end if;
        if scale(v_n) > 0 then
          v_val := to_jsonb(v_n::bigint);
        end if;
      when 'string' then
        if v_type <> 'string' or length(v_val #>> '{}') not between v_min and v_max then
          perform pgflight._bad_option(p_scope, v.key, v_val,
                                       format('a JSON string of %s to %s characters', v_min, v_max));
        end if;
      when 'enum' then
        if v_type <> 'string' or not (v.spec -> 'choices') ? (v_val #>> '{}') then
          perform pgflight._bad_option(p_scope, v.key, v_val,
                                       'one of ' || (select string_agg(c, ', ') from jsonb_array_elements_text(v.spec -> 'choices') c));
        end if;
      when 'timestamptz' then
        -- a date, a time of day (hours and minutes at least), then a UTC offset, before any cast: a
        -- date alone ("2030-01-01", whose "-01" is no offset), a timestamp without an offset, or a
        -- word such as "tomorrow" would be read in the session's TimeZone (or clock), which the
        -- client may not know; refused as _start_at refuses not_before
        v_ts := null;
        if v_type = 'string'
           and (v_val #>> '{}') ~* '^ *[0-9]{4}-[0-9]{2}-[0-9]{2}[t ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)? *(z|utc|[+-][0-9]{1,2}(:?[0-9]{2}){0,2}) *$' then
          begin
            v_ts := (v_val #>> '{}')::timestamptz;
          exception when others then
            v_ts := null;
          end;
        end if;
        if v_ts is null or not isfinite(v_ts)
           or v_ts not between '1970-01-01T00:00:00Z'::timestamptz and '9999-01-01T00:00:00Z'::timestamptz then
          perform pgflight._bad_option(p_scope, v.key, v_val,
                                       'an ISO 8601 timestamp with a time of day and a UTC offset ("2030-01-01T09:00:00Z"), 1970 to 9999');
        end if;
      when 'string[]' then
        if v_type <> 'array' or jsonb_array_length(v_val) > v_max then
          perform pgflight._bad_option(p_scope, v.key, v_val, format('a JSON array of at most %s strings', v_max));
        end if;
        for v_item in select jsonb_array_elements(v_val) loop
          if jsonb_typeof(v_item) <> 'string' or length(v_item #>> '{}') > 256 then
            perform pgflight._bad_option(p_scope, v.key, v_val, 'a JSON array of strings of at most 256 characters');
          end if;
        end loop;
      when 'backoff' then
        v_val := pgflight._check_options('backoff', v_val);
      when 'json' then
        null;  -- any JSON value: the function that takes it caps its size and depth
      when 'object' then
        -- its keys are checked by the caller (fork_agent's tool_results: tool_use ids)
        if v_type <> 'object' or (select count(*) from jsonb_object_keys(v_val)) > v_max then
          perform pgflight._bad_option(p_scope, v.key, v_val, format('a JSON object of at most %s keys', v_max));
        end if;
    end case;
    v_out := v_out || jsonb_build_object(v.key, v_val);
  end loop;
  return v_out;
end
$_$;

ALTER FUNCTION pgflight._check_options(p_scope text, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION _check_options(p_scope text, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._check_options(p_scope text, p_options jsonb) IS 'Internal: validate an options object against _option_spec for this scope (22023 naming the key) and return it normalised.';

-- Name: _claim_fair(bigint, integer, double precision, text[], boolean, timestamp with time zone, bigint[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._claim_fair(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_start boolean, p_now timestamp with time zone, p_workspaces bigint[]) RETURNS TABLE(attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint, step_key text, attempt_no integer, recipe text, input jsonb, lease_expires_at timestamp with time zone, deadline_at timestamp with time zone)
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

ALTER FUNCTION pgflight._claim_fair(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_start boolean, p_now timestamp with time zone, p_workspaces bigint[]) OWNER TO pgflight_owner;

-- Name: FUNCTION _claim_fair(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_start boolean, p_now timestamp with time zone, p_workspaces bigint[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._claim_fair(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_start boolean, p_now timestamp with time zone, p_workspaces bigint[]) IS 'Internal: claim_batch''s fair claim across workspaces with caps, keys, rate limits and pause (its sections: recipes, lanes, global shares, turns and quotas, caps, pass one at once, workspace by workspace, give-backs).';

-- Name: _claim_global_shares(integer, text[], bigint[], bigint[], integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._claim_global_shares(p_global integer, p_recipes text[], p_lane_ws bigint[], p_ws bigint[], p_batch integer) RETURNS integer[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_queued_ws bigint[];
  v_busy integer;
  v_share integer;
  v_fair integer[];
begin
  if p_recipes is null then
    v_queued_ws := p_lane_ws;                 -- one lane per workspace: these are they
  else
    v_queued_ws := array(select l.workspace_id from pgflight._ready_lanes(null) l);
  end if;
  select count(*)::integer into v_busy from unnest(v_queued_ws) q(id)
   where not exists (select from pgflight.workspace_limits l where l.workspace_id = q.id and l.paused_at is not null);
  if v_busy <= 1 then
    return null;                              -- a workspace alone with queued work may take the whole cap
  end if;
  v_share := ceil(p_global::numeric / v_busy)::integer;
  if (select coalesce(sum(f.held), 0) from pgflight.flow_slots f where f.scope = 0) + p_batch <= v_share then
    return null;                              -- the cap is far from full: no workspace can pass its share
  end if;
  select array_agg(greatest(0, v_share - h.n) order by w.o) into v_fair
    from unnest(p_ws) with ordinality w(id, o)
    cross join lateral (
      select count(*)::integer as n
        from (select from pgflight.step_attempts a
               where a.workspace_id = w.id and a.status in ('claimed', 'running', 'cancel_requested')
               limit v_share) x) h;
  return v_fair;
end
$$;

ALTER FUNCTION pgflight._claim_global_shares(p_global integer, p_recipes text[], p_lane_ws bigint[], p_ws bigint[], p_batch integer) OWNER TO pgflight_owner;

-- Name: FUNCTION _claim_global_shares(p_global integer, p_recipes text[], p_lane_ws bigint[], p_ws bigint[], p_batch integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._claim_global_shares(p_global integer, p_recipes text[], p_lane_ws bigint[], p_ws bigint[], p_batch integer) IS 'Internal (_claim_fair): per served workspace, the global in-flight slots it may still take under its fair share of the global cap (ceil(cap / workspaces with queued work) less its leases); null when no share applies.';

-- Name: _claim_quotas(integer, integer[], integer, integer[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._claim_quotas(p_batch integer, p_shares integer[], p_first integer, p_fair integer[]) RETURNS integer[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_n integer := cardinality(p_shares);
  v_quota integer[] := array_fill(0, array[v_n]);
  v_total integer := 0;
  v_left integer := p_batch;
  v_w integer;
begin
  for v_i in 1 .. v_n loop
    v_total := v_total + p_shares[v_i];
  end loop;
  for v_i in 0 .. v_n - 1 loop
    v_w := (p_first + v_i) % v_n + 1;
    v_quota[v_w] := (p_batch * p_shares[v_w]) / v_total;
    v_left := v_left - v_quota[v_w];
  end loop;
  for v_i in 0 .. v_n - 1 loop
    exit when v_left <= 0;
    v_w := (p_first + v_i) % v_n + 1;
    v_quota[v_w] := v_quota[v_w] + 1;
    v_left := v_left - 1;
  end loop;
  if p_fair is not null then
    for v_i in 1 .. v_n loop
      v_quota[v_i] := least(v_quota[v_i], p_fair[v_i]);
    end loop;
  end if;
  return v_quota;
end
$$;

ALTER FUNCTION pgflight._claim_quotas(p_batch integer, p_shares integer[], p_first integer, p_fair integer[]) OWNER TO pgflight_owner;

-- Name: FUNCTION _claim_quotas(p_batch integer, p_shares integer[], p_first integer, p_fair integer[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._claim_quotas(p_batch integer, p_shares integer[], p_first integer, p_fair integer[]) IS 'Internal (_claim_fair): each served workspace''s quota of a batch, by share, the remainder one each in turn order from p_first, capped by p_fair (null: no cap).';

-- Name: _claim_recipes(text[], timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._claim_recipes(p_recipes text[], p_now timestamp with time zone, OUT recipes text[], OUT rated text[], OUT rated_left integer[]) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_rl record;
  v_tokens double precision;
begin
  recipes := coalesce(p_recipes, pgflight._queued_recipes());
  rated := '{}';
  rated_left := '{}';
  recipes := array(select r from unnest(recipes) r
                    where not exists (select from pgflight.recipe_limits l
                                       where l.recipe = r and l.paused_at is not null));
  for v_rl in
    select l.recipe, l.starts_per_s, l.burst, l.tokens, l.refilled_at from pgflight.recipe_limits l
     where l.recipe = any (recipes) and l.starts_per_s is not null
     order by l.recipe
       for update skip locked
  loop
    v_tokens := pgflight._bucket_tokens(v_rl.tokens, v_rl.refilled_at, v_rl.starts_per_s, v_rl.burst, p_now);
    update pgflight.recipe_limits l set tokens = v_tokens, refilled_at = p_now where l.recipe = v_rl.recipe;
    rated := rated || v_rl.recipe;
    rated_left := rated_left || floor(v_tokens)::integer;
  end loop;
  -- a rate-limited recipe whose bucket another claimer holds right now is left to that claimer
  recipes := array(select r from unnest(recipes) r
                    where r = any (rated)
                       or not exists (select from pgflight.recipe_limits l
                                       where l.recipe = r and l.starts_per_s is not null));
end
$$;

ALTER FUNCTION pgflight._claim_recipes(p_recipes text[], p_now timestamp with time zone, OUT recipes text[], OUT rated text[], OUT rated_left integer[]) OWNER TO pgflight_owner;

-- Name: FUNCTION _claim_recipes(p_recipes text[], p_now timestamp with time zone, OUT recipes text[], OUT rated text[], OUT rated_left integer[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._claim_recipes(p_recipes text[], p_now timestamp with time zone, OUT recipes text[], OUT rated text[], OUT rated_left integer[]) IS 'Internal (_claim_fair): the recipes a claim may take, without the paused ones and the rate-limited ones whose bucket another claimer holds; rated/rated_left: the rate-limited recipes this call holds and the starts each may take (buckets refilled to p_now).';

-- Name: _claim_set(bigint, bigint[], text[], bigint[], integer[], smallint[], double precision, boolean, timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._claim_set(p_worker_id bigint, p_lane_ws bigint[], p_lane_recipe text[], p_ws bigint[], p_quota integer[], p_slots smallint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone) RETURNS TABLE(attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint, step_key text, attempt_no integer, recipe text, input jsonb, lease_expires_at timestamp with time zone, deadline_at timestamp with time zone, lease_ws bigint)
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

ALTER FUNCTION pgflight._claim_set(p_worker_id bigint, p_lane_ws bigint[], p_lane_recipe text[], p_ws bigint[], p_quota integer[], p_slots smallint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone) OWNER TO pgflight_owner;

-- Name: FUNCTION _claim_set(p_worker_id bigint, p_lane_ws bigint[], p_lane_recipe text[], p_ws bigint[], p_quota integer[], p_slots smallint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._claim_set(p_worker_id bigint, p_lane_ws bigint[], p_lane_recipe text[], p_ws bigint[], p_quota integer[], p_slots smallint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone) IS 'Internal: claim ready attempts of several lanes (workspace, recipe) at once within per-workspace quotas, parking attempts whose concurrency key is full.';

-- Name: _complete_many(bigint[], bigint[], jsonb[], timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_now timestamp with time zone) RETURNS TABLE(attempt_id bigint, outcome text)
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

ALTER FUNCTION pgflight._complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_now timestamp with time zone) OWNER TO pgflight_owner;

-- Name: FUNCTION _complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_now timestamp with time zone); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_now timestamp with time zone) IS 'Internal: complete attempts set-based; per attempt succeeded | lease_lost | cancelled.';

-- Name: _complete_refusing(bigint[], bigint[], jsonb[], jsonb[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._complete_refusing(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_errors jsonb[]) RETURNS TABLE(attempt_id bigint, outcome text)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_n integer := coalesce(cardinality(p_attempt_ids), 0);
  v_out text[] := array_fill(null::text, array[greatest(v_n, 1)]);
  v_rest integer[];
  v_i integer;
  v_status text;
  v_row record;
begin
  -- Only attempts held by this login's own workers are written: another login's attempt, even
  -- with its current token (a leaked one), is lease_lost for its row alone (_complete_many's
  -- answer for it), the rest of the batch answered as usual
  for v_row in
    select distinct a.id from pgflight.step_attempts a
      join unnest(p_attempt_ids, p_tokens, p_errors) as q(id, token, error)
        on q.id = a.id and q.token = a.fencing_token
     where q.error is not null and a.status in ('claimed', 'running')
       and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
     order by a.id
  loop
    perform pgflight._lock_cascade(v_row.id, false);
  end loop;
  perform from (
    select a.id from pgflight.step_attempts a
      join unnest(p_attempt_ids, p_tokens) as q(id, token) on q.id = a.id and q.token = a.fencing_token
     where a.status in ('claimed', 'running')
       and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
     order by a.id
       for update of a) l;
  for v_i in 1 .. v_n loop
    continue when p_errors[v_i] is null;
    select a.status into v_status from pgflight.step_attempts a
     where a.id = p_attempt_ids[v_i] and a.fencing_token = p_tokens[v_i] and a.status in ('claimed', 'running')
       and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user);
    if found then
      perform pgflight._fail_attempt(p_attempt_ids[v_i], v_status, 'failed', p_errors[v_i], false, null,
                                     'result_refused');
      v_out[v_i] := 'result_refused';
    end if;
  end loop;
  select array_agg(q.ord order by q.ord) into v_rest
    from generate_series(1, v_n) as q(ord) where v_out[q.ord] is null;
  if v_rest is not null then
    v_i := 0;
    for v_row in
      select c.outcome from pgflight._complete_many(
               (select array_agg(p_attempt_ids[r] order by k) from unnest(v_rest) with ordinality as u(r, k)),
               (select array_agg(p_tokens[r] order by k) from unnest(v_rest) with ordinality as u(r, k)),
               (select array_agg(case when p_errors[r] is null then p_results[r] end order by k)
                  from unnest(v_rest) with ordinality as u(r, k)),
               pgflight._now()) c
    loop
      v_i := v_i + 1;
      v_out[v_rest[v_i]] := v_row.outcome;
      if v_row.outcome <> 'succeeded' then
        perform pgflight._record_stale(p_attempt_ids[v_rest[v_i]], p_tokens[v_rest[v_i]], 'complete');
      end if;
    end loop;
  end if;
  return query select p_attempt_ids[q.ord], v_out[q.ord] from generate_series(1, v_n) as q(ord);
end
$$;

ALTER FUNCTION pgflight._complete_refusing(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_errors jsonb[]) OWNER TO pgflight_owner;

-- Name: FUNCTION _complete_refusing(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_errors jsonb[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._complete_refusing(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_errors jsonb[]) IS 'Internal: complete a batch in which some results cannot be stored: those attempts fail alone (result_refused), the others complete.';

-- Name: _concurrency_option(jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._concurrency_option(p_options jsonb, OUT o_key text, OUT o_limit integer) RETURNS record
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if jsonb_typeof(p_options -> 'concurrency_key') is null or jsonb_typeof(p_options -> 'concurrency_key') = 'null' then
    if p_options ? 'concurrency_limit' and jsonb_typeof(p_options -> 'concurrency_limit') <> 'null' then
      raise exception using errcode = '22023', message = 'option concurrency_limit needs concurrency_key',
        hint = 'Pass concurrency_key too, e.g. {"concurrency_key": "customer-42", "concurrency_limit": 1}.';
    end if;
    return;
  end if;
  if jsonb_typeof(p_options -> 'concurrency_key') <> 'string'
     or btrim(p_options ->> 'concurrency_key') = '' or length(p_options ->> 'concurrency_key') > 200 then
    raise exception using errcode = '22023', message = 'option concurrency_key must be a non-blank string of at most 200 characters',
      detail = format('got %s', left((p_options -> 'concurrency_key')::text, 300));
  end if;
  o_key := p_options ->> 'concurrency_key';
  o_limit := coalesce(pgflight._limit_option(p_options, 'concurrency_limit', 1, 1e6, true), 1)::integer;
end
$$;

ALTER FUNCTION pgflight._concurrency_option(p_options jsonb, OUT o_key text, OUT o_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION _concurrency_option(p_options jsonb, OUT o_key text, OUT o_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._concurrency_option(p_options jsonb, OUT o_key text, OUT o_limit integer) IS 'Internal: (concurrency_key, concurrency_limit) from a step''s options; 22023 when malformed.';

-- Name: _cron_field(text, integer, integer, text[], text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._cron_field(p_text text, p_min integer, p_max integer, p_names text[], p_what text) RETURNS integer[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v_item text;
  v_range text;
  v_step integer;
  v_lo integer;
  v_hi integer;
  v_out integer[] := '{}';
  v_parts text[];
begin
  foreach v_item in array string_to_array(lower(p_text), ',') loop
    v_parts := string_to_array(v_item, '/');
    if cardinality(v_parts) > 2 or v_item = '' then
      raise exception using errcode = '22023', message = format('cron %s field %L is malformed', p_what, p_text),
        hint = 'Use *, a value, a range a-b, a list a,b and steps */n or a-b/n.';
    end if;
    v_range := v_parts[1];
    v_step := 1;
    if cardinality(v_parts) = 2 then
      if v_parts[2] !~ '^[0-9]{1,4}$' or v_parts[2]::integer = 0 then
        raise exception using errcode = '22023', message = format('cron %s field %L has a bad step', p_what, p_text),
          hint = 'A step is a positive whole number, e.g. */15.';
      end if;
      v_step := v_parts[2]::integer;
    end if;
    if v_range in ('*', '?') then
      v_lo := p_min;
      v_hi := p_max;
    else
      v_parts := string_to_array(v_range, '-');
      if cardinality(v_parts) > 2 then
        raise exception using errcode = '22023', message = format('cron %s field %L is malformed', p_what, p_text);
      end if;
      for i in 1 .. cardinality(v_parts) loop
        if v_parts[i] ~ '^[0-9]{1,4}$' then
          v_parts[i] := v_parts[i]::integer::text;
        elsif p_names is not null and array_position(p_names, v_parts[i]) is not null then
          v_parts[i] := (array_position(p_names, v_parts[i]) - 1 + p_min)::text;
        else
          raise exception using errcode = '22023',
            message = format('cron %s field %L: %L is not a value', p_what, p_text, v_parts[i]),
            hint = format('Values of the %s field run from %s to %s.', p_what, p_min, p_max);
        end if;
      end loop;
      v_lo := v_parts[1]::integer;
      -- a/n means a, a+n, ... up to the field's end
      v_hi := case when cardinality(v_parts) = 2 then v_parts[2]::integer
                   when cardinality(string_to_array(v_item, '/')) = 2 then p_max
                   else v_lo end;
    end if;
    -- weekday 7 is Sunday too
    if p_what = 'day-of-week' and v_hi = 7 and v_lo <= 7 then
      v_out := v_out || 0;
      v_hi := 6;
      if v_lo = 7 then
        continue;
      end if;
    end if;
    if v_lo < p_min or v_hi > p_max or v_lo > v_hi then
      raise exception using errcode = '22023',
        message = format('cron %s field %L is out of range', p_what, p_text),
        hint = format('Values of the %s field run from %s to %s, low before high.', p_what, p_min, p_max);
    end if;
    v_out := v_out || array(select generate_series(v_lo, v_hi, v_step));
  end loop;
  return array(select distinct x from unnest(v_out) x order by x);
end
$_$;

ALTER FUNCTION pgflight._cron_field(p_text text, p_min integer, p_max integer, p_names text[], p_what text) OWNER TO pgflight_owner;

-- Name: FUNCTION _cron_field(p_text text, p_min integer, p_max integer, p_names text[], p_what text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._cron_field(p_text text, p_min integer, p_max integer, p_names text[], p_what text) IS 'Internal: the sorted allowed values of one cron field; 22023 naming the field when malformed.';

-- Name: _cron_next(integer[], integer[], integer[], integer[], integer[], integer[], boolean, boolean, text, timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._cron_next(p_seconds integer[], p_minutes integer[], p_hours integer[], p_days integer[], p_months integer[], p_weekdays integer[], p_any_day boolean, p_any_weekday boolean, p_tz text, p_after timestamp with time zone) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_t timestamp := date_trunc('second', p_after at time zone p_tz) + interval '1 second';
  v_end timestamp := v_t + interval '10 years';
  v_next integer;
  v_day_ok boolean;
  v_at timestamptz;
begin
  while v_t < v_end loop
    -- month
    if not extract(month from v_t)::integer = any (p_months) then
      v_next := (select min(m) from unnest(p_months) m where m > extract(month from v_t));
      v_t := case when v_next is null
                  then make_timestamp(extract(year from v_t)::integer + 1, p_months[1], 1, 0, 0, 0)
                  else make_timestamp(extract(year from v_t)::integer, v_next, 1, 0, 0, 0) end;
      continue;
    end if;
    -- day: day of month and weekday, Vixie's rule when both are restricted
    v_day_ok := case
      when p_any_day and p_any_weekday then true
      when p_any_day then extract(dow from v_t)::integer = any (p_weekdays)
      when p_any_weekday then extract(day from v_t)::integer = any (p_days)
      else extract(day from v_t)::integer = any (p_days) or extract(dow from v_t)::integer = any (p_weekdays) end;
    if not v_day_ok then
      v_t := date_trunc('day', v_t) + interval '1 day';
      continue;
    end if;
    -- hour
    if not extract(hour from v_t)::integer = any (p_hours) then
      v_next := (select min(h) from unnest(p_hours) h where h > extract(hour from v_t));
      v_t := case when v_next is null then date_trunc('day', v_t) + interval '1 day'
                  else date_trunc('day', v_t) + make_interval(hours => v_next) end;
      continue;
    end if;
    -- minute
    if not extract(minute from v_t)::integer = any (p_minutes) then
      v_next := (select min(m) from unnest(p_minutes) m where m > extract(minute from v_t));
      v_t := case when v_next is null then date_trunc('hour', v_t) + interval '1 hour'
                  else date_trunc('hour', v_t) + make_interval(mins => v_next) end;
      continue;
    end if;
    -- second
    if not floor(extract(second from v_t))::integer = any (p_seconds) then
      v_next := (select min(s) from unnest(p_seconds) s where s > floor(extract(second from v_t)));
      v_t := case when v_next is null then date_trunc('minute', v_t) + interval '1 minute'
                  else date_trunc('minute', v_t) + make_interval(secs => v_next) end;
      continue;
    end if;
    -- a wall-clock match. PostgreSQL reads a wall-clock time that happens twice (clocks going
    -- back) as its second occurrence: take the first, and a time whose first occurrence is not
    -- after p_after has happened already, so the repeated hour never fires twice
    v_at := v_t at time zone p_tz;
    if (v_at - interval '1 hour') at time zone p_tz = v_t then
      v_at := v_at - interval '1 hour';
    elsif (v_at - interval '30 minutes') at time zone p_tz = v_t then
      v_at := v_at - interval '30 minutes';
    end if;
    if v_at > p_after then
      return v_at;
    end if;
    v_t := v_t + interval '1 second';
  end loop;
  return null;
end
$$;

ALTER FUNCTION pgflight._cron_next(p_seconds integer[], p_minutes integer[], p_hours integer[], p_days integer[], p_months integer[], p_weekdays integer[], p_any_day boolean, p_any_weekday boolean, p_tz text, p_after timestamp with time zone) OWNER TO pgflight_owner;

-- Name: FUNCTION _cron_next(p_seconds integer[], p_minutes integer[], p_hours integer[], p_days integer[], p_months integer[], p_weekdays integer[], p_any_day boolean, p_any_weekday boolean, p_tz text, p_after timestamp with time zone); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._cron_next(p_seconds integer[], p_minutes integer[], p_hours integer[], p_days integer[], p_months integer[], p_weekdays integer[], p_any_day boolean, p_any_weekday boolean, p_tz text, p_after timestamp with time zone) IS 'Internal: the first instant after p_after that a parsed cron expression allows, on p_tz''s wall clock; null if none within ten years.';

-- Name: _cron_parse(text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._cron_parse(p_expr text, OUT seconds integer[], OUT minutes integer[], OUT hours integer[], OUT days integer[], OUT months integer[], OUT weekdays integer[], OUT any_day boolean, OUT any_weekday boolean) RETURNS record
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_expr text := lower(btrim(coalesce(p_expr, '')));
  v_f text[];
begin
  v_expr := case v_expr
    when '@yearly' then '0 0 1 1 *' when '@annually' then '0 0 1 1 *' when '@monthly' then '0 0 1 * *'
    when '@weekly' then '0 0 * * 0' when '@daily' then '0 0 * * *' when '@midnight' then '0 0 * * *'
    when '@hourly' then '0 * * * *' else v_expr end;
  v_f := regexp_split_to_array(v_expr, '\s+');
  if length(v_expr) > 500 or cardinality(v_f) not in (5, 6) then
    raise exception using errcode = '22023', message = format('cron expression %L needs 5 or 6 fields', p_expr),
      hint = '"minute hour day-of-month month day-of-week", or with seconds first; e.g. "*/15 * * * *" or "0 30 9 * * MON-FRI".';
  end if;
  if cardinality(v_f) = 5 then
    v_f := '0'::text || v_f;
  end if;
  seconds := pgflight._cron_field(v_f[1], 0, 59, null, 'second');
  minutes := pgflight._cron_field(v_f[2], 0, 59, null, 'minute');
  hours := pgflight._cron_field(v_f[3], 0, 23, null, 'hour');
  days := pgflight._cron_field(v_f[4], 1, 31, null, 'day-of-month');
  months := pgflight._cron_field(v_f[5], 1, 12,
              array['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'], 'month');
  weekdays := pgflight._cron_field(v_f[6], 0, 7, array['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'], 'day-of-week');
  any_day := v_f[4] in ('*', '?');
  any_weekday := v_f[6] in ('*', '?');
end
$$;

ALTER FUNCTION pgflight._cron_parse(p_expr text, OUT seconds integer[], OUT minutes integer[], OUT hours integer[], OUT days integer[], OUT months integer[], OUT weekdays integer[], OUT any_day boolean, OUT any_weekday boolean) OWNER TO pgflight_owner;

-- Name: FUNCTION _cron_parse(p_expr text, OUT seconds integer[], OUT minutes integer[], OUT hours integer[], OUT days integer[], OUT months integer[], OUT weekdays integer[], OUT any_day boolean, OUT any_weekday boolean); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._cron_parse(p_expr text, OUT seconds integer[], OUT minutes integer[], OUT hours integer[], OUT days integer[], OUT months integer[], OUT weekdays integer[], OUT any_day boolean, OUT any_weekday boolean) IS 'Internal: parse a 5- or 6-field cron expression into allowed-value sets; 22023 when malformed.';

-- Name: _dead_letter_poisoned(bigint, text, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._dead_letter_poisoned(p_attempt_id bigint, p_sqlstate text, p_message text, p_actor text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_att record;
  v_error jsonb := jsonb_build_object('message', 'the engine could not process this attempt: ' || p_message,
                                      'sqlstate', p_sqlstate);
begin
  begin
    perform pgflight._lock_cascade(p_attempt_id, true);
    update pgflight.step_attempts a
       set status = 'dead_letter', finished_at = pgflight._now(), reason = 'engine_error', error = v_error
      from pgflight.step_attempts prev
     where a.id = p_attempt_id and prev.id = a.id
       and a.status in ('claimed', 'running', 'cancel_requested')
    returning a.run_id, a.step_id, a.worker_id, prev.status as old_status into v_att;
    if found then
      perform pgflight._event(v_att.run_id, v_att.step_id, p_attempt_id, v_att.old_status, 'dead_letter',
                              v_att.worker_id, 'engine_error', p_actor, v_error);
      begin
        perform pgflight._step_finished(v_att.step_id, 'dead_letter', p_actor);
      exception when others then
        raise warning 'pgflight: attempt % dead-lettered, its parent not told: % (%)', p_attempt_id, sqlerrm, sqlstate;
      end;
    end if;
  exception
    when lock_not_available then
      null;  -- its subtree is in use: the row stays leased, the next pass takes it again
    when others then
      raise warning 'pgflight: attempt % could not be processed nor dead-lettered: % (%)', p_attempt_id, sqlerrm, sqlstate;
  end;
end
$$;

ALTER FUNCTION pgflight._dead_letter_poisoned(p_attempt_id bigint, p_sqlstate text, p_message text, p_actor text) OWNER TO pgflight_owner;

-- Name: FUNCTION _dead_letter_poisoned(p_attempt_id bigint, p_sqlstate text, p_message text, p_actor text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._dead_letter_poisoned(p_attempt_id bigint, p_sqlstate text, p_message text, p_actor text) IS 'Internal: a sweep''s last resort: dead-letter one attempt with the error that stopped it, its cascade''s attempts locked first NOWAIT (a subtree in use leaves the row for the next pass), and go on.';

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
     and not exists (select from pgflight.waits w where w.parked_attempt_id = a.id and w.outcome is null)
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
  begin
    return p_value::timestamptz;
  exception when invalid_datetime_format or datetime_field_overflow or invalid_parameter_value then
    raise exception using
      errcode = '22023',
      message = 'pgflight.fake_now is not an instant',
      detail  = format('pgflight.fake_now is set to %L in this session', left(p_value, 100)),
      hint    = 'SET pgflight.fake_now to a timestamptz such as ''2030-01-01 00:00:00+00'', or RESET it.';
  end;
end
$$;

ALTER FUNCTION pgflight._fake_now(p_value text) OWNER TO pgflight_owner;

-- Name: FUNCTION _fake_now(p_value text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._fake_now(p_value text) IS 'Internal: the fake instant of a test session. Raises ZF009 unless settings.allow_fake_clock, 22023 when the value is not an instant.';

-- Name: _fan_in_clear(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._fan_in_clear(p_parent bigint) RETURNS void
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  delete from pgflight.fan_in_stripes f where f.parent_id = p_parent;
  update pgflight.steps set children_pending = 0 where id = p_parent;
$$;

ALTER FUNCTION pgflight._fan_in_clear(p_parent bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION _fan_in_clear(p_parent bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._fan_in_clear(p_parent bigint) IS 'Internal: zero the fan-in counter of a parent that ended, stripes included.';

-- Name: _fan_in_poke(bigint[], text[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._fan_in_poke(p_step_ids bigint[], p_finals text[]) RETURNS TABLE(id bigint, children_pending integer, fail_fast boolean, failed boolean)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_f record;
  v_take record;
  v_ids bigint[] := '{}';
  v_decs integer[] := '{}';
  v_failed boolean[] := '{}';
  v_left integer[];
  v_fail_fast boolean[];
begin
  -- the ended steps read by primary key in a CTE of their own: joined directly, the planner may
  -- start from the index of children (parent_id not null) and read every child of a fan-out
  for v_f in
    with ended as materialized (
      select s.id, s.parent_id from pgflight.steps s where s.id = any (p_step_ids)
    )
    select e.parent_id, count(*)::integer as n, bool_or(f.final <> 'succeeded') as failed
      from unnest(p_step_ids, p_finals) as f(id, final) join ended e on e.id = f.id
     where e.parent_id is not null
     group by e.parent_id
     order by e.parent_id
  loop
    select t.dry, t.rest into v_take from pgflight._fan_in_take(v_f.parent_id, v_f.n) t;
    if v_take.dry + v_take.rest > 0 or v_f.failed then
      v_ids := v_ids || v_f.parent_id;
      v_decs := v_decs || (v_take.dry + v_take.rest);
      v_failed := v_failed || v_f.failed;
    end if;
  end loop;
  if cardinality(v_ids) = 0 then
    return;
  end if;
  -- lock the parents (id order) in a statement of their own, then decrement
  perform from pgflight.steps p where p.id = any (v_ids) order by p.id for update of p;
  with poked as (
    update pgflight.steps p
       set children_pending = greatest(p.children_pending - d.dec, 0)
      from unnest(v_ids, v_decs, v_failed) as d(id, dec, failed)
     where p.id = d.id
    returning p.id, p.children_pending, p.fail_fast, d.failed
  )
  select array_agg(k.id order by k.id), array_agg(k.children_pending order by k.id),
         array_agg(k.fail_fast order by k.id), array_agg(k.failed order by k.id)
    into v_ids, v_left, v_fail_fast, v_failed
    from poked k;
  delete from pgflight.fan_in_stripes f
   where f.parent_id in (select d.id from unnest(v_ids, v_left) as d(id, n) where d.n = 0);
  return query select * from unnest(v_ids, v_left, v_fail_fast, v_failed);
end
$$;

ALTER FUNCTION pgflight._fan_in_poke(p_step_ids bigint[], p_finals text[]) OWNER TO pgflight_owner;

-- Name: FUNCTION _fan_in_poke(p_step_ids bigint[], p_finals text[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._fan_in_poke(p_step_ids bigint[], p_finals text[]) IS 'Internal: the parent pokes of ended steps through the striped counter; returns the parents whose row changed, with children_pending after (0: wake), fail_fast and whether a child failed.';

-- Name: _fan_in_stripe(bigint, integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._fan_in_stripe(p_parent bigint, p_created integer) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_stripes integer := least(16, p_created / 64);
begin
  if v_stripes < 2
     or exists (select from pgflight.fan_in_stripes f where f.parent_id = p_parent and f.pending > 0) then
    return 0;
  end if;
  delete from pgflight.fan_in_stripes f where f.parent_id = p_parent;  -- dry ones of an earlier fan-out
  insert into pgflight.fan_in_stripes (parent_id, stripe, pending, allotted)
  select p_parent, g.s, n.share, n.share
    from generate_series(0, v_stripes - 1) as g(s)
   cross join lateral (select (p_created / v_stripes + case when g.s < p_created % v_stripes then 1 else 0 end)::integer
                         as share) n;
  return v_stripes;
end
$$;

ALTER FUNCTION pgflight._fan_in_stripe(p_parent bigint, p_created integer) OWNER TO pgflight_owner;

-- Name: FUNCTION _fan_in_stripe(p_parent bigint, p_created integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._fan_in_stripe(p_parent bigint, p_created integer) IS 'Internal: lay the counter stripes of a fan-out of p_created children; returns how many (0: unstriped).';

-- Name: _fan_in_take(bigint, integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._fan_in_take(p_parent bigint, p_n integer, OUT dry integer, OUT rest integer) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_home integer := pg_backend_pid() % 16;
  v_row record;
  v_take integer;
begin
  dry := 0;
  rest := p_n;
  -- one free stripe with enough left, never waiting
  select f.stripe, f.pending, f.allotted into v_row
    from pgflight.fan_in_stripes f
   where f.parent_id = p_parent and f.pending >= p_n
   order by f.stripe < v_home, f.stripe
   limit 1
     for update skip locked;
  if found then
    update pgflight.fan_in_stripes f set pending = f.pending - p_n
     where f.parent_id = p_parent and f.stripe = v_row.stripe;
    dry := case when v_row.pending = p_n then v_row.allotted else 0 end;
    rest := 0;
    return;
  end if;
  -- the end of a fan-in: wait for each stripe with some left, in stripe order, until taken
  for v_row in
    select f.stripe, f.pending, f.allotted
      from pgflight.fan_in_stripes f
     where f.parent_id = p_parent and f.pending > 0
     order by f.stripe
       for update
  loop
    v_take := least(v_row.pending, rest);
    update pgflight.fan_in_stripes f set pending = f.pending - v_take
     where f.parent_id = p_parent and f.stripe = v_row.stripe;
    if v_take = v_row.pending then
      dry := dry + v_row.allotted;
    end if;
    rest := rest - v_take;
    exit when rest = 0;
  end loop;
end
$$;

ALTER FUNCTION pgflight._fan_in_take(p_parent bigint, p_n integer, OUT dry integer, OUT rest integer) OWNER TO pgflight_owner;

-- Name: FUNCTION _fan_in_take(p_parent bigint, p_n integer, OUT dry integer, OUT rest integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._fan_in_take(p_parent bigint, p_n integer, OUT dry integer, OUT rest integer) IS 'Internal: take ended children from a parent''s counter stripes; dry = allotments of the stripes run dry, rest = what no stripe held.';

-- Name: _fill_attempt_flow(); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._fill_attempt_flow() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
begin
  select r.workspace_id into new.workspace_id from pgflight.runs r where r.id = new.run_id;
  select s.concurrency_key, s.concurrency_limit into new.concurrency_key, new.concurrency_limit
    from pgflight.steps s where s.id = new.step_id;
  return new;
end
$$;

ALTER FUNCTION pgflight._fill_attempt_flow() OWNER TO pgflight_owner;

-- Name: FUNCTION _fill_attempt_flow(); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._fill_attempt_flow() IS 'Internal trigger: copy workspace_id and the concurrency key onto an attempt inserted without them.';

-- Name: _fire_schedule(bigint, text, text, text, jsonb, jsonb, timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._fire_schedule(p_schedule_id bigint, p_workspace text, p_name text, p_recipe text, p_input jsonb, p_run_options jsonb, p_fire_at timestamp with time zone) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_run bigint;
begin
  begin
    select r.run_id into v_run
      from pgflight.submit_run(p_workspace, p_recipe, p_input,
             p_run_options || jsonb_build_object(
               'idempotency_key', format('schedule:%s:%s', p_schedule_id, extract(epoch from p_fire_at)),
               'submitted_by', 'schedule:' || p_name)) r;
    update pgflight.schedule_fires f set outcome = 'submitted', run_id = v_run
     where f.schedule_id = p_schedule_id and f.fire_at = p_fire_at;
  exception when others then
    update pgflight.schedule_fires f
       set outcome = 'failed', error = jsonb_build_object('sqlstate', sqlstate, 'message', sqlerrm)
     where f.schedule_id = p_schedule_id and f.fire_at = p_fire_at;
  end;
  return v_run;
end
$$;

ALTER FUNCTION pgflight._fire_schedule(p_schedule_id bigint, p_workspace text, p_name text, p_recipe text, p_input jsonb, p_run_options jsonb, p_fire_at timestamp with time zone) OWNER TO pgflight_owner;

-- Name: FUNCTION _fire_schedule(p_schedule_id bigint, p_workspace text, p_name text, p_recipe text, p_input jsonb, p_run_options jsonb, p_fire_at timestamp with time zone); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._fire_schedule(p_schedule_id bigint, p_workspace text, p_name text, p_recipe text, p_input jsonb, p_run_options jsonb, p_fire_at timestamp with time zone) IS 'Internal: submit one firing''s run idempotently; a refusal is recorded on the firing, never raised.';

-- Name: _firehose_partitions(); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._firehose_partitions() RETURNS TABLE(lo bigint, hi bigint)
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select b.lo, b.hi from pgflight._id_partitions('traces') b
$$;

ALTER FUNCTION pgflight._firehose_partitions() OWNER TO pgflight_owner;

-- Name: FUNCTION _firehose_partitions(); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._firehose_partitions() IS 'Internal: [lo, hi) of each traces/costs partition by agent run id (maintain_partitions).';

-- Name: _fork_agent_budgets(bigint, bigint, bigint, numeric, numeric, double precision, timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._fork_agent_budgets(p_workspace_id bigint, p_run_id bigint, p_step_id bigint, p_max_run_usd numeric, p_max_usd numeric, p_max_wall_s double precision, p_now timestamp with time zone) RETURNS bigint[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ids bigint[] := '{}';
  v_id bigint;
begin
  if p_max_run_usd is not null then
    insert into pgflight.budgets (scope, workspace_id, run_id, limit_usd, started_at)
    values ('run', p_workspace_id, p_run_id, p_max_run_usd, p_now)
    returning id into v_id;
    v_ids := array[v_id];
  end if;
  if p_max_usd is not null or p_max_wall_s is not null then
    insert into pgflight.budgets (scope, workspace_id, run_id, step_id, limit_usd, max_wall_s, started_at)
    values ('step', p_workspace_id, p_run_id, p_step_id, p_max_usd, p_max_wall_s, p_now)
    returning id into v_id;
    v_ids := v_ids || v_id;
  end if;
  return v_ids;
end
$$;

ALTER FUNCTION pgflight._fork_agent_budgets(p_workspace_id bigint, p_run_id bigint, p_step_id bigint, p_max_run_usd numeric, p_max_usd numeric, p_max_wall_s double precision, p_now timestamp with time zone) OWNER TO pgflight_owner;

-- Name: FUNCTION _fork_agent_budgets(p_workspace_id bigint, p_run_id bigint, p_step_id bigint, p_max_run_usd numeric, p_max_usd numeric, p_max_wall_s double precision, p_now timestamp with time zone); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._fork_agent_budgets(p_workspace_id bigint, p_run_id bigint, p_step_id bigint, p_max_run_usd numeric, p_max_usd numeric, p_max_wall_s double precision, p_now timestamp with time zone) IS 'Internal (fork_agent): the fork''s run budget (max_run_usd) and agent step budget (max_usd USD, max_wall_s seconds), each when capped; returns their ids.';

-- Name: _fork_agent_copy_iterations(bigint, integer, jsonb, bigint, bigint, bigint, bigint, timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._fork_agent_copy_iterations(p_from_agent_run_id bigint, p_at_iteration integer, p_results jsonb, p_agent_run_id bigint, p_step_id bigint, p_run_id bigint, p_workspace_id bigint, p_now timestamp with time zone) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- the reused iterations: the task, each response, and the results the next call was sent
  -- (patched ones replaced); api_error and other system blocks (the system band) stay with the original
  insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content,
                               status, tokens, attempt_id, created_at, updated_at)
  select p_agent_run_id, t.iteration, t.seq, t.role, t.block_type, t.tool_use_id, t.tool_name,
         case when t.block_type = 'tool_result' and p_results ? t.tool_use_id
              then jsonb_build_object('type', 'tool_result', 'tool_use_id', t.tool_use_id,
                                      'content', p_results -> t.tool_use_id)
              else t.content end,
         'completed', t.tokens, null, p_now, p_now
    from pgflight.traces t
   where t.agent_run_id = p_from_agent_run_id and t.iteration < p_at_iteration
     and (t.iteration = 0 or t.seq < pgflight._seq_band_system())
     and (t.block_type <> 'tool_result' or t.status = 'completed' or p_results ? t.tool_use_id);
  -- a patched result of a call that has none on record: at the seq the loop would have used
  insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content,
                               status, tokens, attempt_id, created_at, updated_at)
  select p_agent_run_id, u.iteration, pgflight._seq_band_tool_results() + u.seq, 'user', 'tool_result', u.tool_use_id,
         u.tool_name,
         jsonb_build_object('type', 'tool_result', 'tool_use_id', u.tool_use_id, 'content', p_results -> u.tool_use_id),
         'completed', ceil(length((p_results -> u.tool_use_id)::text) / 4.0)::integer, null, p_now, p_now
    from pgflight.traces u
   where u.agent_run_id = p_from_agent_run_id and u.iteration = p_at_iteration - 1 and u.block_type = 'tool_use'
     and u.seq < pgflight._seq_band_tool_results() and p_results ? u.tool_use_id
     and not exists (select from pgflight.traces t
                      where t.agent_run_id = p_agent_run_id and t.iteration = u.iteration and t.block_type = 'tool_result'
                        and t.tool_use_id = u.tool_use_id);
  insert into pgflight.costs (agent_run_id, iteration, step_id, run_id, workspace_id, model, usd, stop_reason,
                              retries, attempt_id, at, reused)
  select p_agent_run_id, c.iteration, p_step_id, p_run_id, p_workspace_id, c.model, 0, c.stop_reason, 0, null, p_now, true
    from pgflight.costs c
   where c.agent_run_id = p_from_agent_run_id and c.iteration between 1 and p_at_iteration - 1 and not c.lease_lost;
end
$$;

ALTER FUNCTION pgflight._fork_agent_copy_iterations(p_from_agent_run_id bigint, p_at_iteration integer, p_results jsonb, p_agent_run_id bigint, p_step_id bigint, p_run_id bigint, p_workspace_id bigint, p_now timestamp with time zone) OWNER TO pgflight_owner;

-- Name: FUNCTION _fork_agent_copy_iterations(p_from_agent_run_id bigint, p_at_iteration integer, p_results jsonb, p_agent_run_id bigint, p_step_id bigint, p_run_id bigint, p_workspace_id bigint, p_now timestamp with time zone); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._fork_agent_copy_iterations(p_from_agent_run_id bigint, p_at_iteration integer, p_results jsonb, p_agent_run_id bigint, p_step_id bigint, p_run_id bigint, p_workspace_id bigint, p_now timestamp with time zone) IS 'Internal (fork_agent): copy the reused iterations (traces, patched results, costs at USD 0) into the fork''s agent run.';

-- Name: _fork_agent_patch(jsonb, bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._fork_agent_patch(p_patch jsonb, p_max_input_bytes bigint) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_size bigint := octet_length(coalesce(p_patch, '{}')::text);
  v_patch jsonb;
  v_results jsonb;
  v_bad text;
begin
  if v_size > p_max_input_bytes then
    raise exception using errcode = 'ZF005', message = 'patch too large',
      detail = format('the patch is %s bytes; settings.max_input_bytes is %s', v_size, p_max_input_bytes),
      hint = 'Patch less (a long tool result can be shortened), or raise settings.max_input_bytes.';
  end if;
  perform pgflight._require_json_depth(p_patch, 'patch');
  v_patch := pgflight._check_options('fork_agent', coalesce(p_patch, '{}'));
  v_results := coalesce(v_patch -> 'tool_results', '{}');
  select v.key into v_bad from jsonb_each(v_results) v
   where jsonb_typeof(v.value) not in ('string', 'array') limit 1;
  if found then
    raise exception using errcode = '22023',
      message = format('patch tool_results.%s must be a string or an array of content blocks', left(v_bad, 256)),
      detail = format('got a JSON %s', jsonb_typeof(v_results -> v_bad)),
      hint = 'e.g. {"tool_results": {"toolu_01": "the result the model should see"}}';
  end if;
  return v_patch;
end
$$;

ALTER FUNCTION pgflight._fork_agent_patch(p_patch jsonb, p_max_input_bytes bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION _fork_agent_patch(p_patch jsonb, p_max_input_bytes bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._fork_agent_patch(p_patch jsonb, p_max_input_bytes bigint) IS 'Internal (fork_agent): the patch checked (size and depth ZF005, keys and values 22023) and normalised.';

-- Name: _fork_agent_require_results(bigint, integer, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._fork_agent_require_results(p_agent_run_id bigint, p_iteration integer, p_results jsonb) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_bad text;
begin
  -- every patched result names a tool call of the iteration (the calls the fork's first is told about)
  select v.key into v_bad from jsonb_each(p_results) v
   where not exists (select from pgflight.traces t
                      where t.agent_run_id = p_agent_run_id and t.iteration = p_iteration
                        and t.block_type = 'tool_use' and t.tool_use_id = v.key
                        and t.seq < pgflight._seq_band_tool_results())
   limit 1;
  if found then
    raise exception using errcode = '22023',
      message = format('patch tool_results.%s is not a tool call of iteration %s', left(v_bad, 256), p_iteration),
      detail = format('the tool calls of iteration %s of agent run %s: %s', p_iteration, p_agent_run_id,
                      coalesce((select string_agg(t.tool_use_id, ', ' order by t.seq) from pgflight.traces t
                                 where t.agent_run_id = p_agent_run_id and t.iteration = p_iteration
                                   and t.block_type = 'tool_use' and t.seq < pgflight._seq_band_tool_results()), 'none')),
      hint = 'Patch only the results the forked iteration is sent (pgflight.agent_transcript shows them).';
  end if;
  -- and every other tool call of it has its result on record
  select u.tool_use_id into v_bad from pgflight.traces u
   where u.agent_run_id = p_agent_run_id and u.iteration = p_iteration and u.block_type = 'tool_use'
     and u.seq < pgflight._seq_band_tool_results() and not p_results ? u.tool_use_id
     and not exists (select from pgflight.traces t
                      where t.agent_run_id = p_agent_run_id and t.iteration = u.iteration and t.block_type = 'tool_result'
                        and t.tool_use_id = u.tool_use_id and t.status = 'completed')
   limit 1;
  if found then
    raise exception using errcode = 'ZF006',
      message = format('tool call %s of iteration %s has no recorded result', v_bad, p_iteration),
      detail = format('agent run %s; the call is in flight or was never run', p_agent_run_id),
      hint = 'Give its result in the patch (tool_results), or fork at an earlier iteration.';
  end if;
end
$$;

ALTER FUNCTION pgflight._fork_agent_require_results(p_agent_run_id bigint, p_iteration integer, p_results jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION _fork_agent_require_results(p_agent_run_id bigint, p_iteration integer, p_results jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._fork_agent_require_results(p_agent_run_id bigint, p_iteration integer, p_results jsonb) IS 'Internal (fork_agent): 22023 a patched result that is no tool call of the iteration, ZF006 a call of it with no recorded result and none patched.';

-- Name: _give_slots_back(bigint[], smallint[], integer[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._give_slots_back(p_scopes bigint[], p_stripes smallint[], p_counts integer[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
begin
  -- PL/pgSQL: its plan is cached across calls (a SQL function with a SET clause is planned each time)
  update pgflight.flow_slots s set held = s.held - u.n
    from unnest(p_scopes, p_stripes, p_counts) u(scope, stripe, n)
   where s.scope = u.scope and s.stripe = u.stripe and u.n > 0;
end
$$;

ALTER FUNCTION pgflight._give_slots_back(p_scopes bigint[], p_stripes smallint[], p_counts integer[]) OWNER TO pgflight_owner;

-- Name: FUNCTION _give_slots_back(p_scopes bigint[], p_stripes smallint[], p_counts integer[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._give_slots_back(p_scopes bigint[], p_stripes smallint[], p_counts integer[]) IS 'Internal: give unused in-flight slots back to the stripes a claim locked (per scope: stripe, count).';

-- Name: _id_partitions(text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._id_partitions(p_parent text) RETURNS TABLE(lo bigint, hi bigint)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
begin
  return query
  select m[1]::bigint, m[2]::bigint
    from pg_catalog.pg_inherits i
    join pg_catalog.pg_class c on c.oid = i.inhrelid
    cross join lateral pg_catalog.regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid),
                                               'FROM \(''?(-?[0-9]+)''?\) TO \(''?(-?[0-9]+)''?\)') m
   where i.inhparent = ('pgflight.' || p_parent)::pg_catalog.regclass and c.relname ~ ('^' || p_parent || '_from_[0-9]+$');
end
$_$;

ALTER FUNCTION pgflight._id_partitions(p_parent text) OWNER TO pgflight_owner;

-- Name: FUNCTION _id_partitions(p_parent text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._id_partitions(p_parent text) IS 'Internal: [lo, hi) of each id-range partition <parent>_from_<lo> of pgflight.<parent> (maintain_partitions).';

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

-- Name: _json_depth(jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._json_depth(p_value jsonb) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_lo integer := 0;  -- the value nests deeper than this
  v_hi integer := 1;  -- and (once the first loop ends) not deeper than this
  v_mid integer;
begin
  if p_value is null or jsonb_typeof(p_value) not in ('object', 'array') then
    return 0;
  end if;
  begin
    while pgflight._json_too_deep(p_value, v_hi) loop
      v_lo := v_hi;
      v_hi := v_hi * 2;
    end loop;
    while v_hi - v_lo > 1 loop
      v_mid := (v_lo + v_hi) / 2;
      if pgflight._json_too_deep(p_value, v_mid) then
        v_lo := v_mid;
      else
        v_hi := v_mid;
      end if;
    end loop;
  exception when statement_too_complex then
    return null;
  end;
  return v_hi;
end
$$;

ALTER FUNCTION pgflight._json_depth(p_value jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION _json_depth(p_value jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._json_depth(p_value jsonb) IS 'Internal: how deep arrays and objects nest in a JSON value (a scalar or NULL is 0, [1] is 1).';

-- Name: _json_too_deep(jsonb, integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._json_too_deep(p_value jsonb, p_cap integer) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
begin
  if p_value is null
     or (pg_column_size(p_value) < 8 * (p_cap + 1) and pg_column_compression(p_value) is null)
     or jsonb_typeof(p_value) not in ('object', 'array') then
    return false;
  end if;
  return jsonb_path_exists(
    p_value, format('strict $.**{%s} ? (@.type() == "array" || @.type() == "object")', p_cap)::jsonpath);
end
$_$;

ALTER FUNCTION pgflight._json_too_deep(p_value jsonb, p_cap integer) OWNER TO pgflight_owner;

-- Name: FUNCTION _json_too_deep(p_value jsonb, p_cap integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._json_too_deep(p_value jsonb, p_cap integer) IS 'Internal: does the JSON value nest arrays and objects deeper than p_cap levels (one pass)?';

-- Name: _key_slot_freed(); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._key_slot_freed() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_scope text := 'key:' || old.workspace_id || ':' || old.concurrency_key;
begin
  insert into pgflight.engine_locks (scope) values (v_scope) on conflict do nothing;
  perform from pgflight.engine_locks l where l.scope = v_scope for share;
  update pgflight.step_attempts a set available_after = pgflight._now()
   where a.id = (select p.id from pgflight.step_attempts p
                  where p.workspace_id = old.workspace_id and p.concurrency_key = old.concurrency_key
                    and p.status = 'queued' and p.available_after = 'infinity'
                  order by p.priority desc, p.id
                  limit 1
                    for update skip locked);
  return null;
end
$$;

ALTER FUNCTION pgflight._key_slot_freed() OWNER TO pgflight_owner;

-- Name: FUNCTION _key_slot_freed(); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._key_slot_freed() IS 'Internal trigger: a keyed attempt stopped holding or waiting for a slot; wake one parked attempt of its key.';

-- Name: _lane_workspaces(text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._lane_workspaces(p_lane text) RETURNS bigint[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- PL/pgSQL for its cached plan, as _may
  return case when pgflight._may(p_lane, null) then null
              else coalesce((select array_agg(distinct g.workspace_id) from pgflight.workspace_grants g
                              where g.login = session_user and g.workspace_id is not null
                                and (g.lane = p_lane or p_lane = 'reader')),
                            '{}') end;
end
$$;

ALTER FUNCTION pgflight._lane_workspaces(p_lane text) OWNER TO pgflight_owner;

-- Name: FUNCTION _lane_workspaces(p_lane text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._lane_workspaces(p_lane text) IS 'Internal: ids of the workspaces the login may act on in this lane; null for every workspace.';

-- Name: _lease_attempts(bigint, bigint[], double precision, boolean, timestamp with time zone, smallint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._lease_attempts(p_worker_id bigint, p_ids bigint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone, p_slots smallint) RETURNS TABLE(attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint, step_key text, attempt_no integer, recipe text, input jsonb, lease_expires_at timestamp with time zone, deadline_at timestamp with time zone)
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

ALTER FUNCTION pgflight._lease_attempts(p_worker_id bigint, p_ids bigint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone, p_slots smallint) OWNER TO pgflight_owner;

-- Name: FUNCTION _lease_attempts(p_worker_id bigint, p_ids bigint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone, p_slots smallint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._lease_attempts(p_worker_id bigint, p_ids bigint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone, p_slots smallint) IS 'Internal: lease locked queued attempts to a worker (token, lease, caps, events row or claim_event_id); a lease under an in-flight cap is clamped to settings.max_lease_s_capped.';

-- Name: _limit(text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._limit(p_name text) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case p_name
    when 'lease_s' then 604800         -- 7 days
    when 'runtime_s' then 31536000     -- 365 days
    when 'delay_s' then 2592000        -- 30 days: a retry delay, a backoff cap
    when 'usd' then 1000000000         -- a billion USD
  end::double precision
$$;

ALTER FUNCTION pgflight._limit(p_name text) OWNER TO pgflight_owner;

-- Name: FUNCTION _limit(p_name text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._limit(p_name text) IS 'Internal: the hard maximum of a kind of option (lease_s, runtime_s, delay_s, usd).';

-- Name: _limit_option(jsonb, text, double precision, double precision, boolean); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._limit_option(p_options jsonb, p_key text, p_min double precision, p_max double precision, p_integer boolean) RETURNS double precision
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_value double precision;
begin
  if jsonb_typeof(p_options -> p_key) is null or jsonb_typeof(p_options -> p_key) = 'null' then
    return null;
  end if;
  if jsonb_typeof(p_options -> p_key) <> 'number' then
    raise exception using errcode = '22023', message = format('option %s must be a number', p_key),
      detail = format('got %s', p_options -> p_key), hint = 'Pass a JSON number, or null to remove the limit.';
  end if;
  v_value := (p_options ->> p_key)::double precision;
  if v_value < p_min or v_value > p_max or (p_integer and v_value <> trunc(v_value)) then
    raise exception using errcode = '22023',
      message = format('option %s is out of range', p_key),
      detail = format('got %s; allowed: %s %s to %s', p_options -> p_key,
                      case when p_integer then 'whole numbers' else 'numbers' end, p_min, p_max),
      hint = 'Pass a value in range, or null to remove the limit.';
  end if;
  return v_value;
end
$$;

ALTER FUNCTION pgflight._limit_option(p_options jsonb, p_key text, p_min double precision, p_max double precision, p_integer boolean) OWNER TO pgflight_owner;

-- Name: FUNCTION _limit_option(p_options jsonb, p_key text, p_min double precision, p_max double precision, p_integer boolean); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._limit_option(p_options jsonb, p_key text, p_min double precision, p_max double precision, p_integer boolean) IS 'Internal: a numeric limit option in range, or null; 22023 naming the key otherwise.';

-- Name: _lock_cascade(bigint, boolean); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._lock_cascade(p_attempt_id bigint, p_nowait boolean) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_top bigint;
begin
  v_top := pgflight._cascade_root((select a.step_id from pgflight.step_attempts a where a.id = p_attempt_id));
  if v_top is null then
    return false;
  end if;
  perform pgflight._lock_subtree(v_top, p_nowait);
  return true;
end
$$;

ALTER FUNCTION pgflight._lock_cascade(p_attempt_id bigint, p_nowait boolean) OWNER TO pgflight_owner;

-- Name: FUNCTION _lock_cascade(p_attempt_id bigint, p_nowait boolean); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._lock_cascade(p_attempt_id bigint, p_nowait boolean) IS 'Internal: lock, deepest first, the live attempts an unsuccessful end of this attempt''s step may cancel (_cascade_root, _lock_subtree); false when that is none but its own.';

-- Name: _lock_event_channel(bigint, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._lock_event_channel(p_workspace_id bigint, p_name text, p_key text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  insert into pgflight.event_channels as c (workspace_id, name, key, touched_at)
  values (p_workspace_id, p_name, p_key, pgflight._now())
  on conflict on constraint event_channels_pkey do update set touched_at = excluded.touched_at;
end
$$;

ALTER FUNCTION pgflight._lock_event_channel(p_workspace_id bigint, p_name text, p_key text) OWNER TO pgflight_owner;

-- Name: FUNCTION _lock_event_channel(p_workspace_id bigint, p_name text, p_key text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._lock_event_channel(p_workspace_id bigint, p_name text, p_key text) IS 'Internal: insert or lock the event channel row of a workspace, name and key (serialises waits and emits).';

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
    workspace_id bigint NOT NULL,
    concurrency_key text,
    concurrency_limit integer,
    claim_event_id bigint,
    finish_event_id bigint,
    slots smallint DEFAULT 0 NOT NULL,
    queue_event_id bigint,
    queue_delay_s double precision,
    CONSTRAINT finished_at_is_after_claimed_at CHECK (((finished_at IS NULL) OR (claimed_at IS NULL) OR (finished_at >= claimed_at))),
    CONSTRAINT leased_attempt_has_owner CHECK (((status <> ALL (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text])) OR ((worker_id IS NOT NULL) AND (fencing_token IS NOT NULL) AND (lease_expires_at IS NOT NULL)))),
    CONSTRAINT status_is_known CHECK ((status = ANY (ARRAY['queued'::text, 'claimed'::text, 'running'::text, 'cancel_requested'::text, 'awaiting_children'::text, 'awaiting_approval'::text, 'succeeded'::text, 'failed'::text, 'lease_expired'::text, 'timed_out'::text, 'dead_letter'::text, 'cancelled'::text])))
)
WITH (fillfactor='80');

ALTER TABLE pgflight.step_attempts OWNER TO pgflight_owner;

-- Name: TABLE step_attempts; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.step_attempts IS 'Attempts (tries) of steps. Live statuses: queued, claimed, running, cancel_requested, awaiting_children, awaiting_approval. An attempt ends failed, lease_expired or timed_out (another attempt follows), or succeeded, dead_letter or cancelled (the step is terminal). Claim metadata (worker_id, claimed_at, lease_expires_at, fencing_token) is never cleared. lease_s in seconds.';

-- Name: COLUMN step_attempts.workspace_id; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.step_attempts.workspace_id IS 'The run''s workspace, copied so the claim reads one table.';

-- Name: COLUMN step_attempts.concurrency_key; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.step_attempts.concurrency_key IS 'The step''s concurrency key and limit, copied like recipe and priority. A queued attempt with available_after = ''infinity'' is parked: its key was full; a freed slot wakes it.';

-- Name: COLUMN step_attempts.claim_event_id; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.step_attempts.claim_event_id IS 'Events id of this attempt''s started claim (queued -> running), shown by run_events; null: the claim, if any, is an events row.';

-- Name: COLUMN step_attempts.finish_event_id; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.step_attempts.finish_event_id IS 'Events id of this attempt''s success from running (running -> succeeded), shown by run_events; null: the end, if any, is an events row.';

-- Name: COLUMN step_attempts.slots; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.step_attempts.slots IS 'What this lease is counted against: bit 1 the global cap, bit 2 its workspace''s cap (0: none).';

-- Name: COLUMN step_attempts.queue_event_id; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.step_attempts.queue_event_id IS 'Events id of the transition that queued this attempt when it wrote no events row, shown by run_events: a submit (a run''s root step, attempt 1; actor runs.submitted_by) or, with queue_delay_s, a reclaim''s retry (reason retry_scheduled, actor reclaim); null: the queued, if any, is an events row.';

-- Name: COLUMN step_attempts.queue_delay_s; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.step_attempts.queue_delay_s IS 'Backoff in seconds of the reclaim''s retry that queued this attempt (its queue_event_id, shown by run_events as retry_scheduled, actor reclaim, detail delay_s rounded to ms and attempt_no); null: the queue_event_id, if any, is a submit''s.';

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

COMMENT ON FUNCTION pgflight._lock_held(p_attempt_id bigint, p_token bigint, p_operation text, p_with_cancel_requested boolean) IS 'Internal: lock a live attempt held with this token, or raise as _reject_write (22023, ZF001, ZF002, ZF003, ZF012).';

-- Name: _lock_subtree(bigint, boolean); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._lock_subtree(p_top bigint, p_nowait boolean) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_steps bigint[];
  v_prev bigint[];
  v_ids bigint[];
  v_busy bigint[];
begin
  loop
    v_prev := null;
    begin
      loop
        v_steps := pgflight._tree_steps(null, p_top);
        if p_nowait or v_prev is not null then
          select array_agg(l.id order by l.id) into v_ids from (
            select a.id from pgflight.step_attempts a
              join unnest(v_steps) as t(id) on t.id = a.step_id
              join pgflight.steps s on s.id = a.step_id
             where a.status in ('queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children',
                                'awaiting_approval')
             order by s.depth desc, a.id
               for update of a nowait) l;
        else
          select array_agg(l.id order by l.id) into v_ids from (
            select a.id from pgflight.step_attempts a
              join unnest(v_steps) as t(id) on t.id = a.step_id
              join pgflight.steps s on s.id = a.step_id
             where a.status in ('queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children',
                                'awaiting_approval')
             order by s.depth desc, a.id
               for update of a) l;
        end if;
        -- the rows locked before cannot have changed (they are ours): the same set means nothing new
        exit when v_ids is not distinct from v_prev;
        v_prev := coalesce(v_ids, '{}');
      end loop;
      return;
    exception when lock_not_available then
      if p_nowait or v_prev is null then
        raise;
      end if;
    end;
    -- a new attempt is held elsewhere: wait for its transaction, holding nothing, then start over
    select array_agg(a.id) into v_busy
      from pgflight.step_attempts a join unnest(pgflight._tree_steps(null, p_top)) as t(id) on t.id = a.step_id
     where a.status in ('queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children', 'awaiting_approval')
       and a.id <> all (v_prev);
    begin
      perform from pgflight.step_attempts a where a.id = any (v_busy) for share of a;
      raise exception using errcode = 'ZF099', message = 'internal: give the share locks back';
    exception when sqlstate 'ZF099' then
      null;
    end;
  end loop;
end
$$;

ALTER FUNCTION pgflight._lock_subtree(p_top bigint, p_nowait boolean) OWNER TO pgflight_owner;

-- Name: FUNCTION _lock_subtree(p_top bigint, p_nowait boolean); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._lock_subtree(p_top bigint, p_nowait boolean) IS 'Internal: lock every live attempt of a subtree, deepest first, including attempts committed while it waited; NOWAIT (55P03) when p_nowait.';

-- Name: _maintain_id_partitions(text[], text, bigint, integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._maintain_id_partitions(p_tables text[], p_ids text, p_width bigint, p_limit integer) RETURNS TABLE(partition_name text, action text, moved_rows bigint)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v_col text := case p_ids when 'agent_runs' then 'agent_run_id' else 'run_id' end;
  v_next bigint;
  v_to bigint;
  v_from bigint;
  v_table text;
  v_name text;
  v_rows bigint;
  v_left boolean;
  v_moved bigint[] := '{}';
  i integer;
begin
  execute format('select case when q.is_called then q.last_value + 1 else q.last_value end from pgflight.%I q',
                 p_ids || '_id_seq') into v_next;
  for i in 1 .. 10 loop  -- a few per call: a jump past them lands in the default partitions meanwhile
    select coalesce(max(b.hi), 0) into v_to from pgflight._id_partitions(p_tables[1]) b;
    -- ids far past the last partition (a cell's ids start at its cell number << 44,
    -- docs/scaling.md): the next partition starts at the width-aligned floor of the next id
    if v_next - v_to > p_width then
      v_to := v_next - v_next % p_width;
    end if;
    exit when v_to - v_next >= p_width / 2;  -- half a partition or more ahead
    begin
      perform set_config('lock_timeout', '200ms', true);
      foreach v_table in array p_tables loop
        v_name := v_table || '_from_' || v_to;
        -- no insert lands in the default partition between the move and the attach
        execute format('lock table pgflight.%I in exclusive mode', v_table || '_default');
        execute format('create table pgflight.%I (like pgflight.%I including defaults including constraints)',
                       v_name, v_table);
        execute format('with m as (delete from pgflight.%I d where d.%I >= %s and d.%I < %s '
                       'returning d.*) insert into pgflight.%I select * from m',
                       v_table || '_default', v_col, v_to, v_col, v_to + p_width, v_name);
        get diagnostics v_rows = row_count;
        execute format('alter table pgflight.%I attach partition pgflight.%I for values from (%s) to (%s)',
                       v_table, v_name, v_to, v_to + p_width);
        v_moved := v_moved || v_rows;
      end loop;
    exception when lock_not_available or duplicate_table then
      exit;  -- the next call creates it (or a concurrent call just did)
    end;
    return query select t || '_from_' || v_to, 'created'::text, m from unnest(p_tables, v_moved) x(t, m);
    v_moved := '{}';
  end loop;
  for v_from, v_to in select b.lo, b.hi from pgflight._id_partitions(p_tables[1]) b where b.hi <= v_next order by b.lo loop
    execute format('select exists (select from pgflight.%I a where a.id >= %s and a.id < %s)', p_ids, v_from, v_to)
      into v_left;
    continue when v_left;
    begin
      perform set_config('lock_timeout', '200ms', true);
      execute format('lock table %s in access exclusive mode',
                     (select string_agg(format('pgflight.%I', t), ', ') from unnest(p_tables) t));
      execute format('select exists (select from pgflight.%I a where a.id >= %s and a.id < %s)', p_ids, v_from, v_to)
        into v_left;
      continue when v_left;
      foreach v_table in array p_tables loop
        v_name := v_table || '_from_' || v_from;
        if to_regclass('pgflight.' || v_name) is not null then
          execute format('drop table pgflight.%I', v_name);
          return query select v_name, 'dropped'::text, null::bigint;
        end if;
      end loop;
    exception when lock_not_available then
      null;  -- the next call drops it
    end;
  end loop;

  foreach v_table in array p_tables loop
    execute format('delete from pgflight.%1$I t where t.ctid = any (array(select d.ctid from pgflight.%1$I d '
                   'where not exists (select from pgflight.%3$I a where a.id = d.%4$I) limit %2$s))',
                   v_table || '_default', coalesce(p_limit::text, 'all'), p_ids, v_col);  -- null: no row limit
    get diagnostics v_rows = row_count;
    if v_rows > 0 then
      return query select v_table || '_default', 'purged'::text, v_rows;
    end if;
  end loop;
end
$_$;

ALTER FUNCTION pgflight._maintain_id_partitions(p_tables text[], p_ids text, p_width bigint, p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION _maintain_id_partitions(p_tables text[], p_ids text, p_width bigint, p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._maintain_id_partitions(p_tables text[], p_ids text, p_width bigint, p_limit integer) IS 'Internal: create ahead / drop when purged the id-range partitions of a family of tables, purge at most p_limit stray rows of their default partitions (maintain_partitions steps 4 and 5).';

-- Name: _may(text, bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) RETURNS boolean
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

ALTER FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION _may(p_lane text, p_workspace_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) IS 'Internal: may the login (session_user) act in this lane on this workspace (null: on every one)?';

-- Name: _model_call_options_ok(jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._model_call_options_ok(p_options jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $_$
  select coalesce(pg_catalog.jsonb_path_match(p_options, '$.type() == "object"
                 && !exists($.keyvalue() ? (@.key != "stop_reason" && @.key != "retries" && @.key != "mark_tools"))
                 && (!exists($.stop_reason) || $.stop_reason.type() == "null" || $.stop_reason.type() == "string")
                 && (!exists($.retries) || $.retries.type() == "null"
                     || ($.retries.type() == "number" && $.retries >= 0 && $.retries <= 1000000
                         && $.retries.floor() == $.retries))
                 && (!exists($.mark_tools) || $.mark_tools.type() == "null" || $.mark_tools.type() == "boolean")',
                                              silent => true), false)
         and coalesce(pg_catalog.length(p_options ->> 'stop_reason') <= 256, true)
$_$;

ALTER FUNCTION pgflight._model_call_options_ok(p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION _model_call_options_ok(p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._model_call_options_ok(p_options jsonb) IS 'Internal (record_model_call): whether the options are the agent loop''s well-formed stop_reason, retries, mark_tools (true) or need _check_options (false). Inlined: no SET clause.';

-- Name: _move_budget(bigint[], numeric, numeric, numeric, boolean, timestamp with time zone, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._move_budget(p_ids bigint[], p_reserve numeric, p_spend numeric, p_release numeric, p_check boolean, p_now timestamp with time zone, p_what text) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
declare
  v_b pgflight.budgets;
begin
  if p_ids is null or cardinality(p_ids) = 0 then
    return null;
  end if;
  -- one statement locks every row in id order (the materialised CTE's FOR UPDATE: no outer qual is
  -- pushed into it, so every row is locked) and, for an admission, returns the first that refuses
  with locked as materialized (
    select b.* from pgflight.budgets b where b.id = any (p_ids) order by b.id for update
  )
  select x.* into v_b
    from locked x
   where p_check
     and ((x.max_wall_s is not null and p_now > x.started_at + make_interval(secs => x.max_wall_s))
          or (x.limit_usd is not null and x.spent_usd + x.reserved_usd - p_release + p_reserve + p_spend > x.limit_usd))
   order by x.id
   limit 1;
  if found then
    if v_b.max_wall_s is not null and p_now > v_b.started_at + make_interval(secs => v_b.max_wall_s) then
      return jsonb_build_object(
        'message', format('budget exceeded: wall time of %s budget %s', v_b.scope, v_b.id),
        'detail',  format('scope=%s budget_id=%s cap=max_wall_s max_wall_s=%s started_at=%s now=%s (%s)',
                          v_b.scope, v_b.id, v_b.max_wall_s, v_b.started_at, p_now, p_what),
        'hint',    'The tree ran past its wall-time cap; raise max_wall_s for the run or agent, or end the work.');
    end if;
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
  perform pg_catalog.pg_notify('pgflight_ready', pg_catalog.pg_current_xact_id()::text);
end
$$;

ALTER FUNCTION pgflight._notify_ready() OWNER TO pgflight_owner;

-- Name: FUNCTION _notify_ready(); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._notify_ready() IS 'Internal: NOTIFY pgflight_ready with the transaction id as payload (a wake ticket, never user data).';

-- Name: _null_refused(text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._null_refused(p_operation text, p_what text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  raise exception using
    errcode = '22023',
    message = format('%s refused: %s is null', p_operation, p_what),
    hint    = 'Pass the attempt_id and fencing_token that claim_batch returned, one token per attempt.';
end
$$;

ALTER FUNCTION pgflight._null_refused(p_operation text, p_what text) OWNER TO pgflight_owner;

-- Name: FUNCTION _null_refused(p_operation text, p_what text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._null_refused(p_operation text, p_what text) IS 'Internal: raise 22023 for a NULL attempt id, fencing token or array element of a fenced call.';

-- Name: _opt_bool(jsonb, text, boolean, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._opt_bool(p_options jsonb, p_key text, p_default boolean, p_scope text DEFAULT 'options'::text) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v jsonb := p_options -> p_key;
begin
  if v is null or jsonb_typeof(v) = 'null' then
    return p_default;
  elsif jsonb_typeof(v) <> 'boolean' then
    perform pgflight._bad_option(p_scope, p_key, v, 'a JSON boolean (true or false)');
  end if;
  return v::boolean;
end
$$;

ALTER FUNCTION pgflight._opt_bool(p_options jsonb, p_key text, p_default boolean, p_scope text) OWNER TO pgflight_owner;

-- Name: FUNCTION _opt_bool(p_options jsonb, p_key text, p_default boolean, p_scope text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._opt_bool(p_options jsonb, p_key text, p_default boolean, p_scope text) IS 'Internal: a boolean option or 22023 naming the key.';

-- Name: _opt_clamped(jsonb, text, double precision, numeric, numeric); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._opt_clamped(p_options jsonb, p_key text, p_default double precision, p_min numeric, p_max numeric) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case when jsonb_typeof(p_options) = 'object' and jsonb_typeof(p_options -> p_key) = 'number'
              then least(greatest((p_options -> p_key)::numeric, p_min), p_max)::double precision
              else p_default end
$$;

ALTER FUNCTION pgflight._opt_clamped(p_options jsonb, p_key text, p_default double precision, p_min numeric, p_max numeric) OWNER TO pgflight_owner;

-- Name: FUNCTION _opt_clamped(p_options jsonb, p_key text, p_default double precision, p_min numeric, p_max numeric); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._opt_clamped(p_options jsonb, p_key text, p_default double precision, p_min numeric, p_max numeric) IS 'Internal: a stored number option clamped into [min, max], the default when it is not a number; never raises.';

-- Name: _opt_int(jsonb, text, bigint, numeric, numeric, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._opt_int(p_options jsonb, p_key text, p_default bigint, p_min numeric, p_max numeric, p_scope text DEFAULT 'options'::text) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v jsonb := p_options -> p_key;
  n numeric;
begin
  if v is null or jsonb_typeof(v) = 'null' then
    return p_default;
  elsif jsonb_typeof(v) = 'number' then
    n := v::numeric;
    if n = trunc(n) and n >= p_min and n <= p_max then
      return n::bigint;
    end if;
  end if;
  perform pgflight._bad_option(p_scope, p_key, v, format('an integer from %s to %s', p_min, p_max));
  return null;
end
$$;

ALTER FUNCTION pgflight._opt_int(p_options jsonb, p_key text, p_default bigint, p_min numeric, p_max numeric, p_scope text) OWNER TO pgflight_owner;

-- Name: FUNCTION _opt_int(p_options jsonb, p_key text, p_default bigint, p_min numeric, p_max numeric, p_scope text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._opt_int(p_options jsonb, p_key text, p_default bigint, p_min numeric, p_max numeric, p_scope text) IS 'Internal: an integer option (3 or 3.0) within [min, max] or 22023 naming the key, the value and the bounds.';

-- Name: _opt_interval(jsonb, text, double precision, numeric, numeric, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._opt_interval(p_options jsonb, p_key text, p_default_s double precision, p_min_s numeric, p_max_s numeric, p_scope text DEFAULT 'options'::text) RETURNS interval
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select make_interval(secs => pgflight._opt_number(p_options, p_key, p_default_s, p_min_s, p_max_s, p_scope))
$$;

ALTER FUNCTION pgflight._opt_interval(p_options jsonb, p_key text, p_default_s double precision, p_min_s numeric, p_max_s numeric, p_scope text) OWNER TO pgflight_owner;

-- Name: FUNCTION _opt_interval(p_options jsonb, p_key text, p_default_s double precision, p_min_s numeric, p_max_s numeric, p_scope text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._opt_interval(p_options jsonb, p_key text, p_default_s double precision, p_min_s numeric, p_max_s numeric, p_scope text) IS 'Internal: a seconds option within [min, max] as an interval, or 22023.';

-- Name: _opt_num(jsonb, text, double precision); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._opt_num(p_options jsonb, p_key text, p_default double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select pgflight._opt_number(p_options, p_key, p_default, -1e15, 1e15)
$$;

ALTER FUNCTION pgflight._opt_num(p_options jsonb, p_key text, p_default double precision) OWNER TO pgflight_owner;

-- Name: FUNCTION _opt_num(p_options jsonb, p_key text, p_default double precision); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._opt_num(p_options jsonb, p_key text, p_default double precision) IS 'Internal: a numeric option within +/-1e15 or its default; 22023 otherwise.';

-- Name: _opt_number(jsonb, text, double precision, numeric, numeric, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._opt_number(p_options jsonb, p_key text, p_default double precision, p_min numeric, p_max numeric, p_scope text DEFAULT 'options'::text) RETURNS double precision
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v jsonb := p_options -> p_key;
  n numeric;
begin
  if v is null or jsonb_typeof(v) = 'null' then
    return p_default;
  elsif jsonb_typeof(v) <> 'number' then
    perform pgflight._bad_option(p_scope, p_key, v, format('a JSON number from %s to %s', p_min, p_max));
  end if;
  n := v::numeric;
  if n < p_min or n > p_max then
    perform pgflight._bad_option(p_scope, p_key, v, format('a JSON number from %s to %s', p_min, p_max));
  end if;
  return n::double precision;
end
$$;

ALTER FUNCTION pgflight._opt_number(p_options jsonb, p_key text, p_default double precision, p_min numeric, p_max numeric, p_scope text) OWNER TO pgflight_owner;

-- Name: FUNCTION _opt_number(p_options jsonb, p_key text, p_default double precision, p_min numeric, p_max numeric, p_scope text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._opt_number(p_options jsonb, p_key text, p_default double precision, p_min numeric, p_max numeric, p_scope text) IS 'Internal: a number option within [min, max] or 22023 naming the key, the value and the bounds.';

-- Name: _opt_string(jsonb, text, text, integer, integer, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._opt_string(p_options jsonb, p_key text, p_default text, p_min_len integer, p_max_len integer, p_scope text DEFAULT 'options'::text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v jsonb := p_options -> p_key;
begin
  if v is null or jsonb_typeof(v) = 'null' then
    return p_default;
  elsif jsonb_typeof(v) <> 'string' or length(v #>> '{}') not between p_min_len and p_max_len then
    perform pgflight._bad_option(p_scope, p_key, v,
                                 format('a JSON string of %s to %s characters', p_min_len, p_max_len));
  end if;
  return v #>> '{}';
end
$$;

ALTER FUNCTION pgflight._opt_string(p_options jsonb, p_key text, p_default text, p_min_len integer, p_max_len integer, p_scope text) OWNER TO pgflight_owner;

-- Name: FUNCTION _opt_string(p_options jsonb, p_key text, p_default text, p_min_len integer, p_max_len integer, p_scope text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._opt_string(p_options jsonb, p_key text, p_default text, p_min_len integer, p_max_len integer, p_scope text) IS 'Internal: a string option of bounded length or 22023 naming the key.';

-- Name: _opt_text(jsonb, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._opt_text(p_options jsonb, p_key text, p_default text) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select pgflight._opt_string(p_options, p_key, p_default, 0, 16777216)
$$;

ALTER FUNCTION pgflight._opt_text(p_options jsonb, p_key text, p_default text) OWNER TO pgflight_owner;

-- Name: FUNCTION _opt_text(p_options jsonb, p_key text, p_default text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._opt_text(p_options jsonb, p_key text, p_default text) IS 'Internal: a string option or its default; 22023 when the value is not a JSON string.';

-- Name: _option_map(); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._option_map() RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select jsonb_object_agg(s.scope || '.' || s.key,
                          jsonb_build_object('kind', s.kind, 'min', s.min_value, 'max', s.max_value,
                                             'choices', s.choices))
    from pgflight._option_spec() s
$$;

ALTER FUNCTION pgflight._option_map() OWNER TO pgflight_owner;

-- Name: FUNCTION _option_map(); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._option_map() IS 'Internal: _option_spec as one jsonb object keyed "scope.key", folded into a constant by its callers'' plans.';

-- Name: _option_spec(); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._option_spec() RETURNS TABLE(scope text, key text, kind text, min_value numeric, max_value numeric, choices text[], default_value text, doc text)
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

ALTER FUNCTION pgflight._option_spec() OWNER TO pgflight_owner;

-- Name: FUNCTION _option_spec(); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._option_spec() IS 'Internal: the catalogue of every API option (scope, key, kind, bounds, default, doc); the single source of _check_options and docs/options.md.';

-- Name: waits; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.waits (
    id bigint NOT NULL,
    step_id bigint NOT NULL,
    wait_key text NOT NULL,
    kind text NOT NULL,
    workspace_id bigint NOT NULL,
    event_name text,
    event_key text,
    due_at timestamp with time zone,
    default_payload jsonb,
    parked_attempt_id bigint,
    requested_at timestamp with time zone NOT NULL,
    outcome text,
    payload jsonb,
    event_id text,
    resolved_at timestamp with time zone,
    CONSTRAINT event_wait_names_its_event CHECK (((kind <> 'event'::text) OR ((event_name IS NOT NULL) AND (event_key IS NOT NULL)))),
    CONSTRAINT kind_is_known CHECK ((kind = ANY (ARRAY['timer'::text, 'event'::text]))),
    CONSTRAINT outcome_is_known CHECK (((outcome IS NULL) OR (outcome = ANY (ARRAY['elapsed'::text, 'received'::text, 'timed_out'::text])))),
    CONSTRAINT resolved_at_is_set_with_outcome CHECK (((outcome IS NULL) = (resolved_at IS NULL))),
    CONSTRAINT timer_has_a_due_time CHECK (((kind <> 'timer'::text) OR (due_at IS NOT NULL)))
);

ALTER TABLE pgflight.waits OWNER TO pgflight_owner;

-- Name: TABLE waits; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.waits IS 'Timers and event waits per step and wait_key. kind: timer | event. due_at: when a timer elapses or an event wait times out (null: no timeout). outcome: elapsed | received | timed_out (null while pending), recorded once. parked_attempt_id: the attempt parked on the wait (awaiting_approval), the one a resolution wakes.';

-- Name: _park_on_wait(pgflight.step_attempts, pgflight.waits); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._park_on_wait(p_att pgflight.step_attempts, p_wait pgflight.waits) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  update pgflight.waits w set parked_attempt_id = p_att.id where w.id = p_wait.id;
  update pgflight.step_attempts a set status = 'awaiting_approval' where a.id = p_att.id;
  perform pgflight._event(p_att.run_id, p_att.step_id, p_att.id, p_att.status, 'awaiting_approval',
                          p_att.worker_id, 'wait_parked', null,
                          jsonb_strip_nulls(jsonb_build_object(
                            'wait_key', p_wait.wait_key, 'kind', p_wait.kind, 'event_name', p_wait.event_name,
                            'event_key', p_wait.event_key, 'due_at', p_wait.due_at)));
end
$$;

ALTER FUNCTION pgflight._park_on_wait(p_att pgflight.step_attempts, p_wait pgflight.waits) OWNER TO pgflight_owner;

-- Name: FUNCTION _park_on_wait(p_att pgflight.step_attempts, p_wait pgflight.waits); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._park_on_wait(p_att pgflight.step_attempts, p_wait pgflight.waits) IS 'Internal: park a held attempt on a pending wait (awaiting_approval, lease given up).';

-- Name: model_prices; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.model_prices (
    model text NOT NULL,
    input_usd_per_mtok numeric(12,6) NOT NULL,
    output_usd_per_mtok numeric(12,6) NOT NULL,
    cache_write_usd_per_mtok numeric(12,6) NOT NULL,
    cache_read_usd_per_mtok numeric(12,6) NOT NULL,
    as_of date NOT NULL,
    source text NOT NULL,
    cache_write_1h_usd_per_mtok numeric(12,6),
    web_search_usd_per_request numeric(12,6) DEFAULT 0 NOT NULL,
    CONSTRAINT model_is_not_blank CHECK ((btrim(model) <> ''::text)),
    CONSTRAINT prices_are_not_negative CHECK (((input_usd_per_mtok >= (0)::numeric) AND (output_usd_per_mtok >= (0)::numeric) AND (cache_write_usd_per_mtok >= (0)::numeric) AND (cache_read_usd_per_mtok >= (0)::numeric))),
    CONSTRAINT server_tool_prices_are_not_negative CHECK (((cache_write_1h_usd_per_mtok >= 0.0) AND (web_search_usd_per_request >= 0.0)))
);

ALTER TABLE pgflight.model_prices OWNER TO pgflight_owner;

-- Name: TABLE model_prices; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.model_prices IS 'USD per million tokens for each model (or model-name prefix; the longest matching prefix wins): input, output, cache_write (5-minute cache writes), cache_read (cache hits). as_of: the date the price was read; source: where.';

-- Name: COLUMN model_prices.cache_write_1h_usd_per_mtok; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.model_prices.cache_write_1h_usd_per_mtok IS 'USD per million one-hour cache-write tokens (Anthropic: 2x the base input price); null: twice input_usd_per_mtok, so a row inserted without it is priced by that rule.';

-- Name: COLUMN model_prices.web_search_usd_per_request; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.model_prices.web_search_usd_per_request IS 'USD per server-side web search (Anthropic: USD 10 per 1,000 searches).';

-- Name: _price_of(pgflight.model_prices, bigint, bigint, bigint, bigint, bigint, bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._price_of(p_price pgflight.model_prices, p_in bigint, p_out bigint, p_cw bigint, p_cr bigint, p_cw_1h bigint, p_searches bigint) RETURNS numeric
    LANGUAGE sql IMMUTABLE
    AS $$
  select (p_in * p_price.input_usd_per_mtok + p_out * p_price.output_usd_per_mtok
          + (greatest(p_cw, p_cw_1h) - p_cw_1h) * p_price.cache_write_usd_per_mtok
          + p_cw_1h * coalesce(p_price.cache_write_1h_usd_per_mtok, 2 * p_price.input_usd_per_mtok)
          + p_cr * p_price.cache_read_usd_per_mtok) / 1000000
         + p_searches * p_price.web_search_usd_per_request
$$;

ALTER FUNCTION pgflight._price_of(p_price pgflight.model_prices, p_in bigint, p_out bigint, p_cw bigint, p_cr bigint, p_cw_1h bigint, p_searches bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION _price_of(p_price pgflight.model_prices, p_in bigint, p_out bigint, p_cw bigint, p_cr bigint, p_cw_1h bigint, p_searches bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._price_of(p_price pgflight.model_prices, p_in bigint, p_out bigint, p_cw bigint, p_cr bigint, p_cw_1h bigint, p_searches bigint) IS 'Internal: USD of a call from its token counts (5-minute and 1-hour cache writes apart) and web searches.';

-- Name: _price_usd(text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._price_usd(p_model text, p_usage jsonb) RETURNS numeric
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_p pgflight.model_prices;
  v_x record;
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
  v_x := pgflight._usage_extras(p_usage);
  return pgflight._price_of(v_p,
                            pgflight._opt_int(p_usage, 'input_tokens', 0, 0, 10000000000, 'usage'),
                            pgflight._opt_int(p_usage, 'output_tokens', 0, 0, 10000000000, 'usage'),
                            pgflight._opt_int(p_usage, 'cache_creation_input_tokens', 0, 0, 10000000000, 'usage'),
                            pgflight._opt_int(p_usage, 'cache_read_input_tokens', 0, 0, 10000000000, 'usage'),
                            v_x.cw_1h, v_x.searches);
end
$$;

ALTER FUNCTION pgflight._price_usd(p_model text, p_usage jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION _price_usd(p_model text, p_usage jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._price_usd(p_model text, p_usage jsonb) IS 'Internal: USD of a call from its usage and pgflight.model_prices (longest prefix). 22023 unknown model.';

-- Name: _queued_recipes(); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._queued_recipes() RETURNS text[]
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

ALTER FUNCTION pgflight._queued_recipes() OWNER TO pgflight_owner;

-- Name: FUNCTION _queued_recipes(); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._queued_recipes() IS 'Internal: the recipes that have queued work; one index probe each.';

-- Name: _raise_budget_exceeded(jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._raise_budget_exceeded(p_refusal jsonb) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  raise exception using
    errcode = coalesce(p_refusal ->> 'sqlstate', 'ZF007'),
    message = p_refusal ->> 'message',
    detail  = coalesce(p_refusal ->> 'detail', ''),
    hint    = coalesce(p_refusal ->> 'hint', '');
end
$$;

ALTER FUNCTION pgflight._raise_budget_exceeded(p_refusal jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION _raise_budget_exceeded(p_refusal jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._raise_budget_exceeded(p_refusal jsonb) IS 'Internal: raise a refusal (ZF007, or its sqlstate: ZF013) with its message, detail and hint.';

-- Name: _ready_lanes(text[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._ready_lanes(p_recipes text[]) RETURNS TABLE(workspace_id bigint, recipe text)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

ALTER FUNCTION pgflight._ready_lanes(p_recipes text[]) OWNER TO pgflight_owner;

-- Name: FUNCTION _ready_lanes(p_recipes text[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._ready_lanes(p_recipes text[]) IS 'Internal: the workspaces (with p_recipes: workspace and recipe pairs) that have queued work; one index probe each.';

-- Name: _reclaim(timestamp with time zone, integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._reclaim(p_now timestamp with time zone, p_limit integer) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ids bigint[];
  v_left bigint[] := '{}';
  v_done integer := 0;
  v_until timestamptz;
begin
  -- Rows a batch left as they were (their subtree in use, a transient error, the budget spent) do
  -- not count against p_limit: they are kept out of the next pick of this call (v_left, still
  -- locked by it), and the call picks again until p_limit rows ended, nothing lapsed is left, or
  -- the time budget (pgflight.reclaim_budget_ms, default 1000, read per call; the rest waits for
  -- the next pass) is spent. So rows that cannot end now never crowd out the others, e.g. a
  -- lapsed lease of another workspace behind them in the pick's order.
  loop
    -- 1. the lapsed attempts, then overrun deadlines among the live leases: SKIP LOCKED. Not ordered
    -- by lease_expires_at: it has no index (a heartbeat stays a HOT update, tables/step_attempts_hot).
    -- Ordered by workspace_id instead, the order of the partial index of the leased rows
    -- (step_attempts_leased_ws_idx), so the pick walks that index and stops at the limit: a seq scan
    -- would read, on every pass of a drain, all the rows the earlier passes already reclaimed
    -- (quadratic over a mass crash). Every lapsed lease is taken within a few passes either way.
    select coalesce(array_agg(l.id), '{}') into v_ids from (
      select a.id from pgflight.step_attempts a
       where a.status in ('claimed', 'running', 'cancel_requested') and a.lease_expires_at < p_now
         and a.id <> all (v_left)
       order by a.workspace_id
       limit p_limit - v_done
         for update of a skip locked) l;
    if cardinality(v_ids) < p_limit - v_done then
      select v_ids || coalesce(array_agg(l.id), '{}') into v_ids from (
        select a.id from pgflight.step_attempts a
         where a.status in ('claimed', 'running') and a.deadline_at < p_now
           and (a.lease_expires_at >= p_now or a.lease_expires_at is null)
           and a.id <> all (v_left)
         order by a.deadline_at limit p_limit - v_done - cardinality(v_ids)
           for update of a skip locked) l;
    end if;
    if cardinality(v_ids) = 0 then
      return v_done;
    end if;
    if v_until is null then
      v_until := pg_catalog.clock_timestamp() + make_interval(secs =>
        coalesce(nullif(pg_catalog.current_setting('pgflight.reclaim_budget_ms', true), ''), '1000')::double precision / 1000);
      perform pg_catalog.set_config('pgflight.reclaim_until', v_until::text, true);
    end if;
    v_done := v_done + pgflight._reclaim_picked(p_now, v_ids);
    exit when v_done >= p_limit or pg_catalog.clock_timestamp() > v_until;
    -- what this batch left as it was; past ten times the limit of such rows the call stops too (a
    -- claim_batch's small reclaim does not walk a whole blocked fan-out; the sweep's limit is large)
    v_left := v_left || coalesce((select array_agg(a.id) from pgflight.step_attempts a
                                   where a.id = any (v_ids) and a.status in ('claimed', 'running', 'cancel_requested')), '{}');
    exit when cardinality(v_left) >= 10::bigint * p_limit;  -- bigint: a limit near 2^31 must not overflow (22003)
  end loop;
  return v_done;
end
$$;

ALTER FUNCTION pgflight._reclaim(p_now timestamp with time zone, p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION _reclaim(p_now timestamp with time zone, p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._reclaim(p_now timestamp with time zone, p_limit integer) IS 'Internal: reclaim at most p_limit attempts whose lease lapsed or whose deadline passed, set-based, SKIP LOCKED on every row, within a time budget (pgflight.reclaim_budget_ms, default 1000); a row that raises is dead-lettered alone, a row whose cascade is locked or that meets a transient error waits for the next pass and does not count against p_limit. Picks them (held FOR UPDATE) and gives them to _reclaim_picked.';

-- Name: _reclaim_end(timestamp with time zone, bigint[], text[], jsonb[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._reclaim_end(p_now timestamp with time zone, p_ids bigint[], p_outcomes text[], p_errors jsonb[]) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $_$
declare
  v_fin_steps bigint[];
  v_fin text[];
begin
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
  $q$ into v_fin_steps, v_fin using p_ids, p_outcomes, p_errors, p_now;
  perform pgflight._steps_finished(v_fin_steps, v_fin, 'reclaim', p_now);
  return cardinality(v_fin_steps);
end
$_$;

ALTER FUNCTION pgflight._reclaim_end(p_now timestamp with time zone, p_ids bigint[], p_outcomes text[], p_errors jsonb[]) OWNER TO pgflight_owner;

-- Name: FUNCTION _reclaim_end(p_now timestamp with time zone, p_ids bigint[], p_outcomes text[], p_errors jsonb[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._reclaim_end(p_now timestamp with time zone, p_ids bigint[], p_outcomes text[], p_errors jsonb[]) IS 'Internal (_reclaim_picked): ends the lapsed attempts p_ids that end their steps (outcomes dead_letter, cancel or run_ended), with their events rows, and finishes the steps, set-based. Returns how many steps finished.';

-- Name: _reclaim_picked(timestamp with time zone, bigint[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._reclaim_picked(p_now timestamp with time zone, p_ids bigint[]) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $_$
declare
  v_ids bigint[] := p_ids;
  -- per attempt of the batch, in attempt id order (section 2)
  v_outcomes text[];
  v_errors jsonb[];
  v_parents bigint[];
  v_runs bigint[];
  v_cascades boolean[];
  v_locked_parents bigint[];
  v_locked_runs bigint[];
  -- the batch split by path: retried, ended, row by row (with their outcomes and errors)
  v_retry bigint[];
  v_retry_errors jsonb[];
  v_end bigint[];
  v_end_outcome text[];
  v_end_errors jsonb[];
  v_rest bigint[];
  v_rest_errors jsonb[];
  v_count integer := 0;
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

  -- 3. the locks and the split. A step that ends needs its parent and (a root) its run locked
  -- too, SKIP LOCKED: in use, the attempt waits for the next pass
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
      -- 4a. the retries: ended, and a successor queued for each
      v_count := v_count + pgflight._reclaim_retry(p_now, v_retry, v_retry_errors);
    end if;
    if v_end is not null then
      -- 4b. the ends: dead letters and cancellations, their steps finished
      v_count := v_count + pgflight._reclaim_end(p_now, v_end, v_end_outcome, v_end_errors);
    end if;
  exception when others then
    -- some row raised: none of the batch was written; each row on its own below
    v_count := 0;
    v_rest := coalesce(v_rest, '{}') || coalesce(v_retry, '{}') || coalesce(v_end, '{}');
    v_rest_errors := coalesce(v_rest_errors, '{}') || coalesce(v_retry_errors, '{}') || coalesce(v_end_errors, '{}');
  end;

  -- 5. row by row: cascades, and a batch that raised (_reclaim_rows)
  if v_rest is not null then
    v_count := v_count + pgflight._reclaim_rows(p_now, v_rest, v_rest_errors);
  end if;
  return v_count;
end
$_$;

ALTER FUNCTION pgflight._reclaim_picked(p_now timestamp with time zone, p_ids bigint[]) OWNER TO pgflight_owner;

-- Name: FUNCTION _reclaim_picked(p_now timestamp with time zone, p_ids bigint[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._reclaim_picked(p_now timestamp with time zone, p_ids bigint[]) IS 'Internal: _reclaim''s second half: ends the attempts p_ids (picked and locked by _reclaim) as retries, dead letters or cancellations, set-based, a batch that raises redone row by row. Returns how many were reclaimed.';

-- Name: _reclaim_retry(timestamp with time zone, bigint[], jsonb[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._reclaim_retry(p_now timestamp with time zone, p_ids bigint[], p_errors jsonb[]) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $_$
declare
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
begin
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
    using p_ids, p_errors, p_now;

  -- the successors, queued. Their flow columns are copied from the attempt each replaces (the
  -- step's), so the fill trigger (step_attempts_fill_flow) has nothing to do.
  -- Their one foreign key (step_attempts_step_id_fkey) holds by construction: each
  -- names a step that _reclaim_picked (its section 2) locked FOR UPDATE in this transaction, and
  -- that the statement before this one updated, so no other session can delete it before this commits
  -- (a delete waits for the lock; a step deleted before the lock was never classified: the
  -- join dropped its attempt) and nothing in this transaction deletes steps. Its check is a
  -- per-row trigger, one SPI query per successor (9 % of a drain's backend CPU in a perf
  -- profile), so a batch of at least 500 is inserted with
  -- session_replication_role = replica when the owner may set it (internals/_row_triggers_off,
  -- as submit_runs and purge_finished), and the setting is restored right after the insert,
  -- before any other write; an error in between rolls it back with the subtransaction of
  -- _reclaim_picked's section 4.
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
  if v_notify then
    perform pgflight._notify_ready();
  end if;
  return v_n;
end
$_$;

ALTER FUNCTION pgflight._reclaim_retry(p_now timestamp with time zone, p_ids bigint[], p_errors jsonb[]) OWNER TO pgflight_owner;

-- Name: FUNCTION _reclaim_retry(p_now timestamp with time zone, p_ids bigint[], p_errors jsonb[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._reclaim_retry(p_now timestamp with time zone, p_ids bigint[], p_errors jsonb[]) IS 'Internal (_reclaim_picked): ends the lapsed attempts p_ids whose steps have attempts left (lease_expired or timed_out, with their errors) and queues each step''s next attempt after its backoff, set-based. Returns how many.';

-- Name: _reclaim_rows(timestamp with time zone, bigint[], jsonb[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._reclaim_rows(p_now timestamp with time zone, p_ids bigint[], p_errors jsonb[]) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $$
declare
  v_row record;
  v_count integer := 0;
  v_until timestamptz;
  v_top bigint;
  v_blocked bigint[] := '{}';
begin
  v_until := nullif(pg_catalog.current_setting('pgflight.reclaim_until', true), '')::timestamptz;
  for v_i in 1 .. coalesce(cardinality(p_ids), 0) loop
    exit when v_until is not null and pg_catalog.clock_timestamp() > v_until;
    select a.id, a.status, a.step_id, a.run_id, a.worker_id, a.lease_expires_at < p_now as lapsed,
           (a.status = 'cancel_requested' or s.failed_attempts + 1 >= s.max_attempts) as ends_step
      into v_row
      from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id
     where a.id = p_ids[v_i];
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
          case when v_row.lapsed then 'lease_expired' else 'timed_out' end, p_errors[v_i], true, null,
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
$$;

ALTER FUNCTION pgflight._reclaim_rows(p_now timestamp with time zone, p_ids bigint[], p_errors jsonb[]) OWNER TO pgflight_owner;

-- Name: FUNCTION _reclaim_rows(p_now timestamp with time zone, p_ids bigint[], p_errors jsonb[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._reclaim_rows(p_now timestamp with time zone, p_ids bigint[], p_errors jsonb[]) IS 'Internal (_reclaim_picked): reclaims the lapsed attempts p_ids one by one (cascades first locked NOWAIT; rows in use, transient errors and rows past pgflight.reclaim_until left for the next pass; other errors dead-letter the row). Returns how many were reclaimed.';

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

-- Name: _refuse_fence_arrays(text, bigint[], bigint[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._refuse_fence_arrays(p_operation text, p_attempt_ids bigint[], p_tokens bigint[]) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if array_ndims(p_attempt_ids) > 1 or array_ndims(p_tokens) > 1 then
    raise exception using
      errcode = '22023',
      message = format('%s refused: attempt ids and tokens must be one-dimensional arrays', p_operation),
      detail  = format('%s dimensions of attempt ids, %s of tokens', coalesce(array_ndims(p_attempt_ids), 1),
                       coalesce(array_ndims(p_tokens), 1)),
      hint    = 'Pass one flat array of attempt ids and one of their tokens, in the same order.';
  end if;
  perform pgflight._null_refused(p_operation, format('element %s of the %s',
    coalesce(array_position(p_attempt_ids, null), array_position(p_tokens, null)),
    case when array_position(p_attempt_ids, null) is not null then 'attempt ids' else 'tokens' end));
end
$$;

ALTER FUNCTION pgflight._refuse_fence_arrays(p_operation text, p_attempt_ids bigint[], p_tokens bigint[]) OWNER TO pgflight_owner;

-- Name: FUNCTION _refuse_fence_arrays(p_operation text, p_attempt_ids bigint[], p_tokens bigint[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._refuse_fence_arrays(p_operation text, p_attempt_ids bigint[], p_tokens bigint[]) IS 'Internal: raise 22023 for a batch''s attempt ids or tokens with a NULL element or more than one dimension.';

-- Name: _reject_write(bigint, bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._reject_write(p_attempt_id bigint, p_token bigint, p_operation text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_att record;
begin
  if p_attempt_id is null or p_token is null then
    perform pgflight._null_refused(p_operation, case when p_attempt_id is null then 'the attempt id'
                                                     else 'the fencing token' end);
  end if;
  select a.status, a.fencing_token, w.login,
         w.login is not distinct from session_user or pgflight._may('worker', a.workspace_id) as visible
    into v_att
    from pgflight.step_attempts a left join pgflight.workers w on w.id = a.worker_id
   where a.id = p_attempt_id;
  if not found or not v_att.visible then
    perform pgflight._unknown_attempt(p_attempt_id);
  end if;
  if v_att.fencing_token = p_token and v_att.login is distinct from session_user then
    perform pgflight._require_own_attempt(p_attempt_id, p_token, p_operation);  -- ZF012
  end if;
  if v_att.fencing_token = p_token and v_att.status in ('cancel_requested', 'cancelled') then
    raise exception using
      errcode = 'ZF002',
      message = format('%s rejected: attempt %s was cancelled', p_operation, p_attempt_id),
      detail  = format('attempt status %s', v_att.status),
      hint    = 'The run or step was cancelled; stop the work and call release_step to acknowledge.';
  end if;
  -- every other path, and the one where the attempt changed since the fenced statement read it
  raise exception using
    errcode = 'ZF001',
    message = format('lease lost on attempt %s', p_attempt_id),
    detail  = format('%s refused: the attempt is not held with caller token %s%s', p_operation, p_token,
                     case when v_att.login = session_user then format(' (attempt status %s)', v_att.status)
                          else '' end),
    hint    = 'The step was reclaimed or finished; abandon this attempt and write nothing.';
end
$$;

ALTER FUNCTION pgflight._reject_write(p_attempt_id bigint, p_token bigint, p_operation text) OWNER TO pgflight_owner;

-- Name: FUNCTION _reject_write(p_attempt_id bigint, p_token bigint, p_operation text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._reject_write(p_attempt_id bigint, p_token bigint, p_operation text) IS 'Internal: raise the refusal of a fenced write, never returns: 22023 (NULL id or token), ZF003 (unknown, or outside the login''s worker lanes), ZF012 (a leaked token), ZF002 (cancelled), ZF001.';

-- Name: _release_reservation(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._release_reservation(p_agent_run_id bigint) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
declare
  v_run pgflight.agent_runs;
begin
  select r.* into v_run from pgflight.agent_runs r where r.id = p_agent_run_id;
  if v_run.reserved_attempt_id is null then
    return;
  end if;
  if v_run.reserved_iteration is not null and v_run.reserved_call_out then
    insert into pgflight.costs (agent_run_id, iteration, step_id, run_id, workspace_id, model, usd, attempt_id, at,
                                lease_lost, unknown_outcome, budget_ids)
    values (v_run.id, v_run.reserved_iteration, v_run.step_id, v_run.run_id, v_run.workspace_id, v_run.model,
            v_run.reserved_usd, v_run.reserved_attempt_id, pgflight._now(), true, true, v_run.reserved_budget_ids)
    on conflict (agent_run_id, iteration, attempt_id) where lease_lost do nothing;
    if found then
      perform pgflight._move_budget(v_run.reserved_budget_ids, 0, v_run.reserved_usd, v_run.reserved_usd, false, null,
                                    format('agent_run=%s iteration=%s unknown outcome: charged at its reservation',
                                           v_run.id, v_run.reserved_iteration));
      update pgflight.agent_runs set usd = usd + v_run.reserved_usd where id = p_agent_run_id;
    else
      perform pgflight._move_budget(v_run.reserved_budget_ids, 0, 0, v_run.reserved_usd, false, null, 'release');
    end if;
  elsif v_run.reserved_iteration is not null then
    perform pgflight._move_budget(v_run.reserved_budget_ids, 0, 0, v_run.reserved_usd, false, null, 'release');
  end if;
  update pgflight.agent_runs
     set reserved_usd = 0, reserved_attempt_id = null, reserved_iteration = null, reserved_budget_ids = null,
         reserved_call_out = false
   where id = p_agent_run_id;
end
$$;

ALTER FUNCTION pgflight._release_reservation(p_agent_run_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION _release_reservation(p_agent_run_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._release_reservation(p_agent_run_id bigint) IS 'Internal: end an agent run''s USD reservation (charged as an unknown_outcome cost when its call was out, else released) and forget the attempt that reserved.';

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
  v_anc record;
begin
  -- the nearest live ancestor's parked attempt, FOR KEY SHARE, read again after the lock (a
  -- cascade this waited for ended it: the next live ancestor up is the one, if any)
  loop
    with recursive up as (
      select s.parent_id as id, 1 as d from pgflight.steps s where s.id = p_step_id
      union all
      select s.parent_id, up.d + 1 from pgflight.steps s join up on s.id = up.id
    )
    select a.id, a.status into v_anc
      from up join pgflight.step_attempts a on a.step_id = up.id
     where a.status in ('queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children', 'awaiting_approval')
     order by up.d
     limit 1;
    exit when v_anc.id is null or v_anc.status <> 'awaiting_children';
    perform from pgflight.step_attempts a where a.id = v_anc.id for key share of a;
    exit when exists (select from pgflight.step_attempts a where a.id = v_anc.id and a.status = 'awaiting_children');
  end loop;
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

-- Name: _require_json_depth(jsonb, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._require_json_depth(p_value jsonb, p_what text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_cap integer;
begin
  if p_value is null then
    return;
  end if;
  v_cap := (select s.max_json_depth from pgflight.settings s);
  -- the size bound of _json_too_deep, here too: most values end here, with no further call
  if (pg_column_size(p_value) < 8 * (v_cap + 1) and pg_column_compression(p_value) is null)
     or not pgflight._json_too_deep(p_value, v_cap) then
    return;
  end if;
  raise exception using
    errcode = 'ZF005',
    message = format('%s nests deeper than the cap settings.max_json_depth', p_what),
    detail  = format('%s nests %s levels deep (arrays and objects); settings.max_json_depth is %s',
                     p_what, coalesce(pgflight._json_depth(p_value)::text, 'more than ' || v_cap), v_cap),
    hint    = 'Send a flatter value (nesting this deep is refused so that every client can read it back), '
              'or raise the cap: UPDATE pgflight.settings SET max_json_depth = ...';
end
$$;

ALTER FUNCTION pgflight._require_json_depth(p_value jsonb, p_what text) OWNER TO pgflight_owner;

-- Name: FUNCTION _require_json_depth(p_value jsonb, p_what text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._require_json_depth(p_value jsonb, p_what text) IS 'Internal: raise ZF005 naming settings.max_json_depth when the JSON value nests deeper than it.';

-- Name: _require_known_keys(jsonb, text[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._require_known_keys(p_options jsonb, p_allowed text[]) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_key text;
begin
  if p_options is null or jsonb_typeof(p_options) <> 'object' then
    raise exception using errcode = '22023', message = 'options must be a JSON object',
      detail = format('got %s', coalesce(jsonb_typeof(p_options), 'NULL')),
      hint = format('Pass an object with some of: %s.', array_to_string(p_allowed, ', '));
  end if;
  select k into v_key from jsonb_object_keys(p_options) k where k <> all (p_allowed) order by k limit 1;
  if v_key is not null then
    raise exception using errcode = '22023', message = format('unknown option %s', v_key),
      detail = format('options: %s', p_options),
      hint = format('Known options: %s.', array_to_string(p_allowed, ', '));
  end if;
end
$$;

ALTER FUNCTION pgflight._require_known_keys(p_options jsonb, p_allowed text[]) OWNER TO pgflight_owner;

-- Name: FUNCTION _require_known_keys(p_options jsonb, p_allowed text[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._require_known_keys(p_options jsonb, p_allowed text[]) IS 'Internal: 22023 unless p_options is an object whose keys are all in p_allowed.';

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
  if found and not pgflight._may(p_lane, v_ws) then
    if not pgflight._may('reader', v_ws) then
      raise exception using errcode = 'ZF003', message = format('unknown run %s', p_run_id);
    end if;
    perform pgflight._require_lane(p_lane, v_ws, p_operation);
  end if;
end
$$;

ALTER FUNCTION pgflight._require_lane_on_run(p_lane text, p_run_id bigint, p_operation text) OWNER TO pgflight_owner;

-- Name: FUNCTION _require_lane_on_run(p_lane text, p_run_id bigint, p_operation text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._require_lane_on_run(p_lane text, p_run_id bigint, p_operation text) IS 'Internal: ZF012 unless the login has the lane on the run''s workspace (ZF003 unknown run when it sees nothing there); an unknown run passes.';

-- Name: _require_lane_on_step(text, bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._require_lane_on_step(p_lane text, p_step_id bigint, p_operation text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint;
begin
  select r.workspace_id into v_ws from pgflight.steps s join pgflight.runs r on r.id = s.run_id where s.id = p_step_id;
  if found and not pgflight._may(p_lane, v_ws) then
    if not pgflight._may('reader', v_ws) then
      raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
    end if;
    perform pgflight._require_lane(p_lane, v_ws, p_operation);
  end if;
end
$$;

ALTER FUNCTION pgflight._require_lane_on_step(p_lane text, p_step_id bigint, p_operation text) OWNER TO pgflight_owner;

-- Name: FUNCTION _require_lane_on_step(p_lane text, p_step_id bigint, p_operation text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._require_lane_on_step(p_lane text, p_step_id bigint, p_operation text) IS 'Internal: ZF012 unless the login has the lane on the step''s workspace (ZF003 unknown step when it sees nothing there); an unknown step passes.';

-- Name: _require_limit(text, integer, integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._require_limit(p_name text, p_value integer, p_max integer) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_value is null or p_value < 1 or p_value > p_max then
    raise exception using errcode = '22023', message = format('%s must be between 1 and %s', p_name, p_max),
      detail = format('got %s', coalesce(p_value::text, 'null')),
      hint = 'Page with the keyset argument instead of a larger limit.';
  end if;
end
$$;

ALTER FUNCTION pgflight._require_limit(p_name text, p_value integer, p_max integer) OWNER TO pgflight_owner;

-- Name: FUNCTION _require_limit(p_name text, p_value integer, p_max integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._require_limit(p_name text, p_value integer, p_max integer) IS 'Internal: 22023 unless a read''s row limit is between 1 and p_max.';

-- Name: _require_own_attempt(bigint, bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._require_own_attempt(p_attempt_id bigint, p_token bigint, p_operation text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_in_lane boolean;
begin
  if p_attempt_id is null or p_token is null then
    perform pgflight._null_refused(p_operation, case when p_attempt_id is null then 'the attempt id'
                                                     else 'the fencing token' end);
  end if;
  select pgflight._may('worker', a.workspace_id) into v_in_lane
    from pgflight.step_attempts a left join pgflight.workers w on w.id = a.worker_id
   where a.id = p_attempt_id and a.fencing_token = p_token
     and w.login is distinct from session_user;
  if not found then
    return;
  end if;
  if not v_in_lane then
    perform pgflight._unknown_attempt(p_attempt_id);
  end if;
  raise exception using
    errcode = 'ZF012',
    message = format('%s refused: attempt %s is not held by a worker of login %s', p_operation, p_attempt_id,
                     session_user),
    detail  = 'An attempt may be written only by the login whose worker claimed it, whatever token is sent.',
    hint    = 'Write only attempts that your own claim_batch returned.';
end
$$;

ALTER FUNCTION pgflight._require_own_attempt(p_attempt_id bigint, p_token bigint, p_operation text) OWNER TO pgflight_owner;

-- Name: FUNCTION _require_own_attempt(p_attempt_id bigint, p_token bigint, p_operation text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._require_own_attempt(p_attempt_id bigint, p_token bigint, p_operation text) IS 'Internal: raise when this token is the attempt''s current one but no worker of the login holds it (ZF012; ZF003 outside the login''s worker lanes); 22023 for a NULL id or token.';

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

-- Name: _require_readable_run(bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._require_readable_run(p_run_id bigint, p_operation text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint;
begin
  if p_run_id is null then
    raise exception using errcode = '22023', message = format('%s refused: the run id is null', p_operation),
      hint = 'Pass the run_id that submit_run returned.';
  end if;
  select r.workspace_id into v_ws from pgflight.runs r where r.id = p_run_id;
  if not found or not pgflight._may('reader', v_ws) then
    raise exception using errcode = 'ZF003', message = format('unknown run %s', p_run_id),
      hint = 'Use a run_id of a workspace the login may read.';
  end if;
end
$$;

ALTER FUNCTION pgflight._require_readable_run(p_run_id bigint, p_operation text) OWNER TO pgflight_owner;

-- Name: FUNCTION _require_readable_run(p_run_id bigint, p_operation text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._require_readable_run(p_run_id bigint, p_operation text) IS 'Internal: 22023 for a NULL run id, ZF003 unknown run for one that does not exist or the login may not read.';

-- Name: _reserve(pgflight.agent_runs, bigint, integer, numeric, timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._reserve(p_run pgflight.agent_runs, p_attempt_id bigint, p_iteration integer, p_est_usd numeric, p_now timestamp with time zone) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ids bigint[];
  v_refusal jsonb;
  v_tokens_per_min bigint;
begin
  if p_run.reserved_attempt_id = p_attempt_id and p_run.reserved_iteration = p_iteration then
    if not p_run.reserved_call_out then
      update pgflight.agent_runs set reserved_call_out = true where id = p_run.id;
    end if;
    return null;
  end if;
  if p_run.reserved_iteration is not null then
    perform pgflight._move_budget(p_run.reserved_budget_ids, 0, 0, p_run.reserved_usd, false, p_now, 'release');
  end if;
  if p_iteration > p_run.max_iterations then
    v_refusal := pgflight._iteration_refusal(p_run, p_iteration);
  else
    select l.model_tokens_per_min into v_tokens_per_min
      from pgflight.workspace_limits l where l.workspace_id = p_run.workspace_id;
    if v_tokens_per_min is not null then
      v_refusal := pgflight._token_admission(p_run, v_tokens_per_min, p_now);
    end if;
  end if;
  if v_refusal is null then
    v_ids := pgflight._call_budget_ids(p_run, p_now);
    v_refusal := pgflight._move_budget(v_ids, p_est_usd, 0, 0, true, p_now,
                                       format('agent_run=%s iteration=%s', p_run.id, p_iteration));
  end if;
  if v_refusal is null then
    update pgflight.agent_runs
       set reserved_usd = p_est_usd, reserved_attempt_id = p_attempt_id, reserved_iteration = p_iteration,
           reserved_budget_ids = v_ids, reserved_call_out = true, updated_at = p_now
     where id = p_run.id;
  elsif p_run.reserved_iteration is not null then
    update pgflight.agent_runs
       set reserved_usd = 0, reserved_iteration = null, reserved_budget_ids = null, reserved_call_out = false,
           updated_at = p_now
     where id = p_run.id;
  end if;
  return v_refusal;
end
$$;

ALTER FUNCTION pgflight._reserve(p_run pgflight.agent_runs, p_attempt_id bigint, p_iteration integer, p_est_usd numeric, p_now timestamp with time zone) OWNER TO pgflight_owner;

-- Name: FUNCTION _reserve(p_run pgflight.agent_runs, p_attempt_id bigint, p_iteration integer, p_est_usd numeric, p_now timestamp with time zone); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._reserve(p_run pgflight.agent_runs, p_attempt_id bigint, p_iteration integer, p_est_usd numeric, p_now timestamp with time zone) IS 'Internal: admission of a model call (caps and model tokens per minute checked, est USD reserved); returns null or the refusal.';

-- Name: _resolve_wait(bigint, text, jsonb, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._resolve_wait(p_wait_id bigint, p_outcome text, p_payload jsonb, p_event_id text, p_actor text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_wait pgflight.waits;
  v_att_id bigint;
begin
  update pgflight.waits w
     set outcome = p_outcome, payload = p_payload, event_id = p_event_id, resolved_at = pgflight._now()
   where w.id = p_wait_id and w.outcome is null
  returning w.* into v_wait;
  if not found then
    return false;
  end if;
  if v_wait.parked_attempt_id is not null then
    update pgflight.step_attempts a
       set status = 'queued', available_after = pgflight._now()
     where a.id = v_wait.parked_attempt_id and a.status = 'awaiting_approval'
    returning a.id into v_att_id;
  end if;
  perform pgflight._event((select s.run_id from pgflight.steps s where s.id = v_wait.step_id), v_wait.step_id,
                          v_att_id, case when v_att_id is null then null else 'awaiting_approval' end,
                          case when v_att_id is null then null else 'queued' end,
                          null, 'wait_resolved', p_actor,
                          jsonb_build_object('wait_key', v_wait.wait_key, 'kind', v_wait.kind,
                                             'outcome', p_outcome, 'event_id', p_event_id));
  if v_att_id is not null then
    perform pgflight._notify_ready();
  end if;
  return true;
end
$$;

ALTER FUNCTION pgflight._resolve_wait(p_wait_id bigint, p_outcome text, p_payload jsonb, p_event_id text, p_actor text) OWNER TO pgflight_owner;

-- Name: FUNCTION _resolve_wait(p_wait_id bigint, p_outcome text, p_payload jsonb, p_event_id text, p_actor text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._resolve_wait(p_wait_id bigint, p_outcome text, p_payload jsonb, p_event_id text, p_actor text) IS 'Internal: record a wait''s outcome if none is recorded yet (true) and requeue the attempt parked on it.';

-- Name: _return_slots(); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._return_slots() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  insert into pgflight.flow_slot_returns (scope)
  select x.scope from (values (1, 0::bigint), (2, old.workspace_id)) x(bit, scope)
   where old.slots & x.bit <> 0;
  new.slots := 0;
  return new;
end
$$;

ALTER FUNCTION pgflight._return_slots() OWNER TO pgflight_owner;

-- Name: FUNCTION _return_slots(); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._return_slots() IS 'Internal trigger: a leased attempt counted against caps stopped being leased; return its slots.';

-- Name: _row_triggers_off(); Type: FUNCTION; Schema: pgflight; Owner: pgflight_privileged

CREATE FUNCTION pgflight._row_triggers_off() RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_before text := pg_catalog.current_setting('session_replication_role');
  v_may boolean := false;
begin
  if v_before = 'replica' or pg_catalog.current_setting('server_version_num')::integer < 150000 then
    return null;
  end if;
  execute 'select pg_catalog.has_parameter_privilege(''session_replication_role'', ''SET'')' into v_may;
  if not v_may then
    return null;
  end if;
  perform pg_catalog.set_config('session_replication_role', 'replica', true);
  return v_before;
end
$$;

ALTER FUNCTION pgflight._row_triggers_off() OWNER TO pgflight_privileged;

-- Name: FUNCTION _row_triggers_off(); Type: COMMENT; Schema: pgflight; Owner: pgflight_privileged

COMMENT ON FUNCTION pgflight._row_triggers_off() IS 'Internal: session_replication_role = replica for this transaction when its owner may set it; returns the value to restore, null when not switched.';

-- Name: _row_triggers_on(text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_privileged

CREATE FUNCTION pgflight._row_triggers_on(p_before text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_before is null or p_before not in ('origin', 'local') then
    raise exception using errcode = '22023',
      message = format('session_replication_role may be restored only to origin or local, not %s',
                       coalesce(p_before, 'null')),
      hint = 'Pass what _row_triggers_off returned, when it returned a value.';
  end if;
  perform pg_catalog.set_config('session_replication_role', p_before, true);
end
$$;

ALTER FUNCTION pgflight._row_triggers_on(p_before text) OWNER TO pgflight_privileged;

-- Name: FUNCTION _row_triggers_on(p_before text); Type: COMMENT; Schema: pgflight; Owner: pgflight_privileged

COMMENT ON FUNCTION pgflight._row_triggers_on(p_before text) IS 'Internal: restore session_replication_role (origin or local) after _row_triggers_off; owner-only.';

-- Name: _seq_band_system(); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._seq_band_system() RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$ select 2000 $$;

ALTER FUNCTION pgflight._seq_band_system() OWNER TO pgflight_owner;

-- Name: FUNCTION _seq_band_system(); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._seq_band_system() IS 'Internal: the first seq of the transcript''s system blocks (record_trace''s default: the next free seq from here).';

-- Name: _seq_band_tool_results(); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._seq_band_tool_results() RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$ select 1000 $$;

ALTER FUNCTION pgflight._seq_band_tool_results() OWNER TO pgflight_owner;

-- Name: FUNCTION _seq_band_tool_results(); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._seq_band_tool_results() IS 'Internal: the first seq of the transcript''s tool results (a tool_use at seq j has its result at this + j).';

-- Name: _set_paused(text, text, boolean, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._set_paused(p_kind text, p_name text, p_pause boolean, p_note text) RETURNS boolean
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

ALTER FUNCTION pgflight._set_paused(p_kind text, p_name text, p_pause boolean, p_note text) OWNER TO pgflight_owner;

-- Name: FUNCTION _set_paused(p_kind text, p_name text, p_pause boolean, p_note text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._set_paused(p_kind text, p_name text, p_pause boolean, p_note text) IS 'Internal: pause or resume a workspace or recipe, logged with the login and note; true when the state changed.';

-- Name: _set_slot_cap(bigint, integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._set_slot_cap(p_scope bigint, p_cap integer) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_bit smallint := case when p_scope = 0 then 1 else 2 end;
  v_held integer;
  v_stripes integer;
begin
  insert into pgflight.engine_locks (scope) values ('slots:' || p_scope) on conflict do nothing;
  perform from pgflight.engine_locks l where l.scope = 'slots:' || p_scope for update;
  perform from pgflight.flow_slots s where s.scope = p_scope for update;
  if p_cap is null then
    delete from pgflight.flow_slots s where s.scope = p_scope;
    delete from pgflight.flow_slot_returns f where f.scope = p_scope;
    update pgflight.step_attempts a set slots = a.slots & ~v_bit
     where a.status in ('claimed', 'running', 'cancel_requested') and a.slots & v_bit <> 0
       and (p_scope = 0 or a.workspace_id = p_scope);
    return;
  end if;
  -- one statement, one snapshot: the returns it drops and the attempts it counts agree (a
  -- finish committed after it started is neither counted nor dropped; its return is folded later)
  with marked as (
    update pgflight.step_attempts a set slots = a.slots | v_bit
     where a.status in ('claimed', 'running', 'cancel_requested') and a.slots & v_bit = 0
       and (p_scope = 0 or a.workspace_id = p_scope)
    returning 1
  ), dropped as (
    delete from pgflight.flow_slot_returns f where f.scope = p_scope returning 1
  )
  select (select count(*) from marked)
         + (select count(*) from pgflight.step_attempts a
             where a.status in ('claimed', 'running', 'cancel_requested') and a.slots & v_bit <> 0
               and (p_scope = 0 or a.workspace_id = p_scope))
    into v_held;  -- (a data-modifying CTE runs whether read or not: `dropped` is done)
  -- up to eight stripes (fewer under a small cap), the cap split evenly; the held slots fill
  -- stripes in order, any excess over the cap stays on the first (nothing is taken until it drains)
  v_stripes := least(8, greatest(p_cap, 1));
  delete from pgflight.flow_slots s where s.scope = p_scope;
  insert into pgflight.flow_slots (scope, stripe, cap, held)
  select p_scope, i, c.cap,
         case when i = 0 then greatest(least(c.cap, v_held), v_held - (p_cap - c.cap))
              else least(c.cap, greatest(0, v_held - c.before)) end
    from generate_series(0, v_stripes - 1) i,
         lateral (select p_cap / v_stripes + (i < p_cap % v_stripes)::integer as cap,
                         i * (p_cap / v_stripes) + least(i, p_cap % v_stripes) as before) c;
end
$$;

ALTER FUNCTION pgflight._set_slot_cap(p_scope bigint, p_cap integer) OWNER TO pgflight_owner;

-- Name: FUNCTION _set_slot_cap(p_scope bigint, p_cap integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._set_slot_cap(p_scope bigint, p_cap integer) IS 'Internal: (re)build and reconcile the in-flight slot stripes of a workspace (0: global) for a cap (null: none).';

-- Name: _settle_model_call(pgflight.agent_runs, integer, numeric, boolean, boolean, numeric, bigint[], timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._settle_model_call(p_run pgflight.agent_runs, p_iteration integer, p_usd numeric, p_reserved boolean, p_want boolean, p_next_est_usd numeric, p_next_ids bigint[], p_now timestamp with time zone) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
declare
  v_settled boolean := false;
  v_next boolean := false;
  v_want boolean := p_want;
  v_ids bigint[];
  v_reserve numeric;
  v_refusal jsonb;
begin
  if p_reserved and (not v_want or p_next_ids is not distinct from p_run.reserved_budget_ids) then
    v_ids := p_run.reserved_budget_ids;
    v_reserve := case when v_want then p_next_est_usd else 0 end;
    if coalesce(pg_catalog.cardinality(v_ids), 0) = 0 then
      v_settled := true;
    else
      with locked as materialized (
        select b.id,
               v_want and ((b.max_wall_s is not null and p_now > b.started_at + pg_catalog.make_interval(secs => b.max_wall_s))
                           or (b.limit_usd is not null
                               and b.spent_usd + b.reserved_usd - p_run.reserved_usd + v_reserve + p_usd > b.limit_usd))
                 as refuses
          from pgflight.budgets b where b.id = any (v_ids) order by b.id for update
      )
      update pgflight.budgets b
         set reserved_usd = greatest(b.reserved_usd + v_reserve - p_run.reserved_usd, 0),
             spent_usd = b.spent_usd + p_usd
       where b.id = any (v_ids) and not exists (select from locked x where x.refuses);
      v_settled := found;
    end if;
    if not v_settled and v_want then
      -- refused (or none of the rows is left): _move_budget decides and moves; refused, the call
      -- is settled alone below and the next one not asked again
      v_settled := pgflight._move_budget(v_ids, v_reserve, p_usd, p_run.reserved_usd, true, p_now,
                                         pg_catalog.format('agent_run=%s iteration=%s', p_run.id, p_iteration + 1)) is null;
    end if;
    v_next := v_settled and v_want;
    v_settled := v_settled or not v_want;  -- a settlement alone that found no row moved nothing
    v_want := false;
  end if;
  if v_settled then
    null;
  elsif p_reserved then
    perform pgflight._move_budget(p_run.reserved_budget_ids, 0, p_usd, p_run.reserved_usd, false, p_now, 'settle');
  else
    if p_run.reserved_iteration is not null then
      perform pgflight._move_budget(p_run.reserved_budget_ids, 0, 0, p_run.reserved_usd, false, p_now, 'release');
    end if;
    v_refusal := coalesce(pgflight._iteration_refusal(p_run, p_iteration),
                          pgflight._move_budget(pgflight._call_budget_ids(p_run, p_now), 0, p_usd, 0, true, p_now,
                                                pg_catalog.format('agent_run=%s iteration=%s unreserved', p_run.id, p_iteration)));
    if v_refusal is not null then
      perform pgflight._raise_budget_exceeded(v_refusal);
    end if;
  end if;
  if v_want then
    -- the next call's admission on its own (this call was not reserved, or on other budgets)
    v_next := pgflight._move_budget(p_next_ids, p_next_est_usd, 0, 0, true, p_now,
                                    pg_catalog.format('agent_run=%s iteration=%s', p_run.id, p_iteration + 1)) is null;
  end if;
  return v_next;
end
$$;

ALTER FUNCTION pgflight._settle_model_call(p_run pgflight.agent_runs, p_iteration integer, p_usd numeric, p_reserved boolean, p_want boolean, p_next_est_usd numeric, p_next_ids bigint[], p_now timestamp with time zone) OWNER TO pgflight_owner;

-- Name: FUNCTION _settle_model_call(p_run pgflight.agent_runs, p_iteration integer, p_usd numeric, p_reserved boolean, p_want boolean, p_next_est_usd numeric, p_next_ids bigint[], p_now timestamp with time zone); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._settle_model_call(p_run pgflight.agent_runs, p_iteration integer, p_usd numeric, p_reserved boolean, p_want boolean, p_next_est_usd numeric, p_next_ids bigint[], p_now timestamp with time zone) IS 'Internal (record_model_call): settle a recorded call''s cost on its budgets and admit the next call; returns whether the next call was admitted. ZF007 when an unreserved call crosses a cap.';

-- Name: _settle_tokens(pgflight.agent_runs, bigint, bigint, boolean, timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._settle_tokens(p_run pgflight.agent_runs, p_limit bigint, p_tokens bigint, p_reserved boolean, p_now timestamp with time zone) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_delta bigint := p_tokens - case when p_reserved then pgflight._token_estimate(p_run, p_limit) else 0 end;
begin
  if v_delta = 0 then
    return;
  end if;
  insert into pgflight.engine_locks (scope) values ('model_tokens:' || p_run.workspace_id) on conflict do nothing;
  perform from pgflight.engine_locks l where l.scope = 'model_tokens:' || p_run.workspace_id for update;
  insert into pgflight.model_token_windows as w (workspace_id, bucket, tokens)
  values (p_run.workspace_id, to_timestamp(floor(extract(epoch from p_now) / 5) * 5), v_delta)
  on conflict on constraint model_token_window_is_unique do update set tokens = w.tokens + excluded.tokens;
end
$$;

ALTER FUNCTION pgflight._settle_tokens(p_run pgflight.agent_runs, p_limit bigint, p_tokens bigint, p_reserved boolean, p_now timestamp with time zone) OWNER TO pgflight_owner;

-- Name: FUNCTION _settle_tokens(p_run pgflight.agent_runs, p_limit bigint, p_tokens bigint, p_reserved boolean, p_now timestamp with time zone); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._settle_tokens(p_run pgflight.agent_runs, p_limit bigint, p_tokens bigint, p_reserved boolean, p_now timestamp with time zone) IS 'Internal: put a recorded call''s model tokens in its workspace''s window (less its admitted estimate).';

-- Name: _start_at(jsonb, timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._start_at(p_options jsonb, p_now timestamp with time zone) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v_text text;
  v_delay double precision;
begin
  if p_options ? 'delay_s' and p_options ? 'not_before' then
    raise exception using errcode = '22023', message = 'options delay_s and not_before exclude each other',
      hint = 'Pass one of them.';
  end if;
  if p_options ? 'delay_s' then
    v_delay := coalesce(pgflight._limit_option(p_options, 'delay_s', 0, 1e9, false), 0);
    return p_now + make_interval(secs => v_delay);
  end if;
  if not p_options ? 'not_before' or jsonb_typeof(p_options -> 'not_before') = 'null' then
    return p_now;
  end if;
  if jsonb_typeof(p_options -> 'not_before') <> 'string' then
    raise exception using errcode = '22023', message = 'option not_before must be a string',
      detail = format('got %s', p_options -> 'not_before'),
      hint = 'Pass an ISO 8601 timestamp with a UTC offset, e.g. "2030-01-01T09:00:00Z", or use delay_s.';
  end if;
  v_text := btrim(p_options ->> 'not_before');
  -- a date, a time of day (hours and minutes at least), then the offset: a date alone ends in
  -- "-DD", which the offset pattern alone took for an offset
  if v_text !~* '^[0-9]{4}-[0-9]{2}-[0-9]{2}[t ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)? *(z|utc|[+-][0-9]{1,2}(:?[0-9]{2}){0,2})$' then
    raise exception using errcode = '22023', message = 'option not_before needs a UTC offset and a time of day',
      detail = format('got %L', v_text),
      hint = 'Write the offset ("2030-01-01T09:00:00+02:00" or "...Z"), or use delay_s (seconds, on the server''s clock).';
  end if;
  begin
    return v_text::timestamptz;
  exception when others then
    raise exception using errcode = '22023', message = 'option not_before is not a timestamp',
      detail = format('got %L', v_text),
      hint = 'Pass an ISO 8601 timestamp with a UTC offset, e.g. "2030-01-01T09:00:00Z".';
  end;
end
$_$;

ALTER FUNCTION pgflight._start_at(p_options jsonb, p_now timestamp with time zone) OWNER TO pgflight_owner;

-- Name: FUNCTION _start_at(p_options jsonb, p_now timestamp with time zone); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._start_at(p_options jsonb, p_now timestamp with time zone) IS 'Internal: when a step becomes claimable from options delay_s / not_before (offset required); 22023 otherwise.';

-- Name: _step_finished(bigint, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._step_finished(p_step_id bigint, p_final text, p_actor text DEFAULT NULL::text) RETURNS void
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select pgflight._steps_finished(array[p_step_id], array[p_final], p_actor, pgflight._now()) $$;

ALTER FUNCTION pgflight._step_finished(p_step_id bigint, p_final text, p_actor text) OWNER TO pgflight_owner;

-- Name: FUNCTION _step_finished(p_step_id bigint, p_final text, p_actor text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._step_finished(p_step_id bigint, p_final text, p_actor text) IS 'Internal: _steps_finished for one step ending now.';

-- Name: _steps_finished(bigint[], text[], text, timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._steps_finished(p_step_ids bigint[], p_finals text[], p_actor text, p_now timestamp with time zone) RETURNS void
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

ALTER FUNCTION pgflight._steps_finished(p_step_ids bigint[], p_finals text[], p_actor text, p_now timestamp with time zone) OWNER TO pgflight_owner;

-- Name: FUNCTION _steps_finished(p_step_ids bigint[], p_finals text[], p_actor text, p_now timestamp with time zone); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._steps_finished(p_step_ids bigint[], p_finals text[], p_actor text, p_now timestamp with time zone) IS 'Internal: hook of every terminal step transition, set-based: cancels what an unsuccessful step left below it, pokes parents (fail-fast or wake), ends a root''s run.';

-- Name: _store_tool_results(bigint, bigint, jsonb, timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._store_tool_results(p_run_id bigint, p_attempt_id bigint, p_results jsonb, p_now timestamp with time zone) RETURNS text[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
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
    select p_run_id, j.iteration, pgflight._seq_band_tool_results() + j.seq, 'user', 'tool_result', j.tid, j.tool_name, j.result, 'completed',
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

-- Name: _submit_runs_refuse_conflict(jsonb, bigint, integer[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._submit_runs_refuse_conflict(p_runs jsonb, p_workspace_id bigint, p_created integer[]) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_bad record;
begin
  select e.ord::integer as ord, r.id, r.recipe, r.input_hash,
         e.value ->> 'recipe' as recipe_now,
         encode(sha256(convert_to(coalesce(e.value -> 'input', '{}')::text, 'UTF8')), 'hex') as hash_now,
         (select min(f.ord) from jsonb_array_elements(p_runs) with ordinality as f(value, ord)
           where f.value -> 'options' ->> 'idempotency_key' = r.idempotency_key)::integer as first_ord
    into v_bad
    from jsonb_array_elements(p_runs) with ordinality as e(value, ord)
    join pgflight.runs r on r.workspace_id = p_workspace_id
                        and r.idempotency_key = e.value -> 'options' ->> 'idempotency_key'
   where not exists (select from unnest(p_created) c(i) where c.i = e.ord)
     and (r.recipe <> e.value ->> 'recipe'
          or r.input_hash <> encode(sha256(convert_to(coalesce(e.value -> 'input', '{}')::text, 'UTF8')), 'hex'))
   order by e.ord
   limit 1;
  if found then
    raise exception using errcode = 'ZF004',
      message = format('submit_runs element %s: idempotency key %L was already used with a different input',
                       v_bad.ord, (p_runs -> (v_bad.ord - 1)) -> 'options' ->> 'idempotency_key'),
      detail = format('run %s has recipe %s and input sha256 %s%s; element %s has recipe %s and input sha256 %s',
                      v_bad.id, v_bad.recipe, v_bad.input_hash,
                      case when v_bad.first_ord < v_bad.ord and v_bad.first_ord = any (p_created)
                           then format(' (created by element %s of this call)', v_bad.first_ord) else '' end,
                      v_bad.ord, v_bad.recipe_now, v_bad.hash_now),
      hint = 'Use a new idempotency key for a different job, or resubmit the original input.';
  end if;
end
$$;

ALTER FUNCTION pgflight._submit_runs_refuse_conflict(p_runs jsonb, p_workspace_id bigint, p_created integer[]) OWNER TO pgflight_owner;

-- Name: FUNCTION _submit_runs_refuse_conflict(p_runs jsonb, p_workspace_id bigint, p_created integer[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._submit_runs_refuse_conflict(p_runs jsonb, p_workspace_id bigint, p_created integer[]) IS 'Internal (submit_runs): ZF004 for the first element whose idempotency key names a run of another recipe or input; nothing otherwise.';

-- Name: _submit_runs_refuse_element(jsonb, bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._submit_runs_refuse_element(p_element jsonb, p_max_input_bytes bigint) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if jsonb_typeof(p_element) <> 'object' then
    raise exception using errcode = '22023', message = 'a run must be a JSON object',
      detail = format('got %s', left(p_element::text, 200)),
      hint = 'Each element is {"recipe": ..., "input": ..., "options": {...}}.';
  elsif jsonb_typeof(p_element -> 'recipe') is distinct from 'string' or btrim(p_element ->> 'recipe') = '' then
    raise exception using errcode = '22023', message = 'recipe is required',
      detail = format('got %s', left(coalesce((p_element -> 'recipe')::text, 'no recipe'), 200)),
      hint = 'Pass the name a worker registered with @recipe(...), as a JSON string.';
  elsif length(p_element ->> 'recipe') > 256 then
    raise exception using errcode = '22023', message = 'recipe name is longer than 256 characters',
      detail = format('got %s characters', length(p_element ->> 'recipe')), hint = 'Use a short recipe name.';
  elsif p_element - '{recipe,input,options}'::text[] <> '{}' then
    raise exception using errcode = '22023',
      message = format('unknown key %s in a run', (select k from jsonb_object_keys(p_element - 'recipe' - 'input' - 'options') k
                                                      order by k limit 1)),
      detail = 'known keys: input, options, recipe', hint = 'Check the spelling; options go inside "options".';
  elsif jsonb_typeof(p_element -> 'options') not in ('object', 'null') then
    raise exception using errcode = '22023', message = 'options of submit_run must be a JSON object',
      detail = format('got a JSON %s', jsonb_typeof(p_element -> 'options')),
      hint = 'See docs/options.md for the keys each function takes.';
  elsif jsonb_typeof(p_element -> 'options' -> 'idempotency_key') not in ('string', 'null')
        or length(p_element -> 'options' ->> 'idempotency_key') not between 1 and 512 then
    perform pgflight._bad_option('submit_run', 'idempotency_key', p_element -> 'options' -> 'idempotency_key',
                                 'a JSON string of 1 to 512 characters');
  else
    perform pgflight._require_cap('max_input_bytes', p_max_input_bytes,
                                  octet_length(coalesce(p_element -> 'input', '{}')::text), 'input (bytes)');
  end if;
end
$$;

ALTER FUNCTION pgflight._submit_runs_refuse_element(p_element jsonb, p_max_input_bytes bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION _submit_runs_refuse_element(p_element jsonb, p_max_input_bytes bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._submit_runs_refuse_element(p_element jsonb, p_max_input_bytes bigint) IS 'Internal (submit_runs): raises what is wrong with a malformed element (22023 naming it, ZF005 input size).';

-- Name: _submit_runs_require_depth(jsonb, integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._submit_runs_require_depth(p_runs jsonb, p_max_depth integer) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_idx integer;
begin
  if pgflight._json_too_deep(p_runs, p_max_depth + 2) then
    select e.ord into v_idx
      from jsonb_array_elements(p_runs) with ordinality as e(value, ord)
     where jsonb_typeof(e.value) = 'object'
       and pgflight._json_too_deep(e.value -> 'input', p_max_depth)
     order by e.ord limit 1;
    if v_idx is not null then
      perform pgflight._require_json_depth(p_runs -> (v_idx - 1) -> 'input', format('input of run %s', v_idx));
    end if;
  end if;
end
$$;

ALTER FUNCTION pgflight._submit_runs_require_depth(p_runs jsonb, p_max_depth integer) OWNER TO pgflight_owner;

-- Name: FUNCTION _submit_runs_require_depth(p_runs jsonb, p_max_depth integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._submit_runs_require_depth(p_runs jsonb, p_max_depth integer) IS 'Internal (submit_runs): ZF005 naming the first run whose input nests deeper than p_max_depth.';

-- Name: _submit_runs_workspace(text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._submit_runs_workspace(p_workspace text, OUT id bigint, OUT max_run_usd numeric) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  select w.id, w.max_run_usd into id, max_run_usd from pgflight.workspaces w where w.name = p_workspace
     for key share;
  if not found or not pgflight._may('operator', id) then
    if not found or not pgflight._may('reader', id) then
      perform pgflight._unknown_workspace(p_workspace);
    end if;
    perform pgflight._require_lane('operator', id, 'submit_runs');
  end if;
end
$$;

ALTER FUNCTION pgflight._submit_runs_workspace(p_workspace text, OUT id bigint, OUT max_run_usd numeric) OWNER TO pgflight_owner;

-- Name: FUNCTION _submit_runs_workspace(p_workspace text, OUT id bigint, OUT max_run_usd numeric); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._submit_runs_workspace(p_workspace text, OUT id bigint, OUT max_run_usd numeric) IS 'Internal (submit_runs): the workspace by name, FOR KEY SHARE, with its max_run_usd; ZF003 unknown or unseen, ZF012 no operator lane.';

-- Name: _sweep_loop_lease(boolean); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._sweep_loop_lease(p_take boolean) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_started timestamptz;
  v_n integer;
begin
  perform pg_catalog.pg_stat_clear_snapshot();  -- pg_stat_activity as of now, not of the transaction's first read
  -- backend start times through _backend_started_at (pgflight_privileged's: another role's backend
  -- shows its start only to pg_read_all_stats, which the owner does not hold)
  v_started := pgflight._backend_started_at(pg_catalog.pg_backend_pid());
  if p_take then
    update pgflight.engine_locks l set holder_pid = pg_catalog.pg_backend_pid(), holder_started_at = v_started
     where l.scope = 'sweep_loop'
       and (l.holder_pid is null
            or (l.holder_pid = pg_catalog.pg_backend_pid() and l.holder_started_at = v_started)
            or pgflight._backend_started_at(l.holder_pid) is distinct from l.holder_started_at);
  else
    update pgflight.engine_locks l set holder_pid = null, holder_started_at = null
     where l.scope = 'sweep_loop' and l.holder_pid = pg_catalog.pg_backend_pid() and l.holder_started_at = v_started;
  end if;
  get diagnostics v_n = row_count;
  return v_n > 0;
end
$$;

ALTER FUNCTION pgflight._sweep_loop_lease(p_take boolean) OWNER TO pgflight_owner;

-- Name: FUNCTION _sweep_loop_lease(p_take boolean); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._sweep_loop_lease(p_take boolean) IS 'Internal: take (true) or give back (false) the sweep loop''s lease for this backend; returns whether it did.';

-- Name: _take_slots_all(bigint[], integer[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._take_slots_all(p_scopes bigint[], p_wants integer[]) RETURNS TABLE(scope bigint, got integer, stripe smallint)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
declare
  v_start integer := pg_catalog.pg_backend_pid() % 64;
  v_n integer := cardinality(p_scopes);
  v_got integer[];
  v_first smallint[];
  v_tried bigint[] := '{}';  -- scope * 64 + stripe of every stripe locked
  v_short bigint[] := '{}';
  v_short_want integer[] := '{}';
  v_locked_now bigint[];
  v_round integer := 0;
  v_s bigint;
  v_t integer;
  v_st smallint;
  v_i integer;
begin
  -- (array bookkeeping in PL/pgSQL's simple expressions, not SQL: each SQL expression run here
  -- costs tens of microseconds, a simple one about one)
  v_got := array_fill(0, array[v_n]);
  v_first := array_fill(null::smallint, array[v_n]);
  for v_i in 1 .. v_n loop
    if p_wants[v_i] > 0 then
      v_short := v_short || p_scopes[v_i];
      v_short_want := v_short_want || p_wants[v_i];
    end if;
  end loop;
  while v_short <> '{}' and v_round < 8 loop
    v_round := v_round + 1;
    v_locked_now := '{}';
    for v_s, v_st, v_t in
      with locked as materialized (
        -- the next stripe of each scope still short, skipping stripes other claimers hold
        select l.scope, l.stripe, l.cap, l.held, w.want
          from unnest(v_short, v_short_want) w(scope, want)
          cross join lateral (
            select s.scope, s.stripe, s.cap, s.held from pgflight.flow_slots s
             where s.scope = w.scope and (s.scope * 64 + s.stripe) <> all (v_tried)
             order by (s.stripe - v_start + 64) % 64
             limit 1
               for update skip locked) l
      ), returned as (
        -- the committed returns of the scopes whose first stripe this is (a return not yet
        -- committed is still a held slot)
        delete from pgflight.flow_slot_returns f
         where v_round = 1
           and f.id in (select g.id from pgflight.flow_slot_returns g
                         where g.scope in (select l.scope from locked l)
                         limit 10000 for update skip locked)
        returning f.scope, f.n
      ), took as (
        select l.scope, l.stripe, coalesce(r.n, 0) as folded,
               least(greatest(l.cap - l.held + coalesce(r.n, 0), 0), l.want) as take
          from locked l
          left join (select r.scope, sum(r.n)::integer as n from returned r group by r.scope) r on r.scope = l.scope
      ), moved as (
        update pgflight.flow_slots s set held = s.held - t.folded + t.take
          from took t
         where s.scope = t.scope and s.stripe = t.stripe and (t.folded <> 0 or t.take <> 0)
      )
      select t.scope, t.stripe, t.take from took t
    loop
      v_tried := v_tried || (v_s * 64 + v_st);
      v_locked_now := v_locked_now || v_s;
      v_i := array_position(p_scopes, v_s);
      v_got[v_i] := v_got[v_i] + v_t;
      v_first[v_i] := coalesce(v_first[v_i], v_st);
    end loop;
    -- the scopes still short that locked a stripe this round go on to their next stripe; those
    -- that could lock none have no stripe free right now
    v_short := '{}';
    v_short_want := '{}';
    for v_i in 1 .. v_n loop
      if v_got[v_i] < p_wants[v_i] and p_scopes[v_i] = any (v_locked_now) then
        v_short := v_short || p_scopes[v_i];
        v_short_want := v_short_want || (p_wants[v_i] - v_got[v_i]);
      end if;
    end loop;
  end loop;
  for v_i in 1 .. v_n loop
    scope := p_scopes[v_i];
    got := v_got[v_i];
    stripe := v_first[v_i];
    return next;
  end loop;
end
$$;

ALTER FUNCTION pgflight._take_slots_all(p_scopes bigint[], p_wants integer[]) OWNER TO pgflight_owner;

-- Name: FUNCTION _take_slots_all(p_scopes bigint[], p_wants integer[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._take_slots_all(p_scopes bigint[], p_wants integer[]) IS 'Internal: take in-flight slots of several capped scopes at once (p_wants[i] of p_scopes[i]) from the stripes free right now.';

-- Name: _token_admission(pgflight.agent_runs, bigint, timestamp with time zone); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._token_admission(p_run pgflight.agent_runs, p_limit bigint, p_now timestamp with time zone) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_limit bigint := p_limit;
  v_est bigint := pgflight._token_estimate(p_run, p_limit);
  v_used bigint;
  v_free_at timestamptz;
  v_retry integer;
begin
  insert into pgflight.engine_locks (scope) values ('model_tokens:' || p_run.workspace_id) on conflict do nothing;
  perform from pgflight.engine_locks l where l.scope = 'model_tokens:' || p_run.workspace_id for update;
  select coalesce(sum(w.tokens), 0) into v_used
    from pgflight.model_token_windows w
   where w.workspace_id = p_run.workspace_id and w.bucket > p_now - interval '65 s';
  if v_used < v_limit and v_used + v_est <= v_limit then
    if v_est > 0 then
      insert into pgflight.model_token_windows as w (workspace_id, bucket, tokens)
      values (p_run.workspace_id, to_timestamp(floor(extract(epoch from p_now) / 5) * 5), v_est)
      on conflict on constraint model_token_window_is_unique do update set tokens = w.tokens + excluded.tokens;
    end if;
    return null;
  end if;
  -- the first bucket whose passing leaves room: a bucket starting at b leaves the window at b + 65 s
  select min(x.bucket) into v_free_at
    from (select w.bucket, sum(w.tokens) over (order by w.bucket) as passed
            from pgflight.model_token_windows w
           where w.workspace_id = p_run.workspace_id and w.bucket > p_now - interval '65 s') x
   where v_used - x.passed < v_limit and v_used - x.passed + v_est <= v_limit;
  v_retry := greatest(ceil(extract(epoch from coalesce(v_free_at, p_now) + interval '65 s' - p_now)), 1)::integer;
  return jsonb_build_object(
    'sqlstate', 'ZF013',
    'message', format('model tokens per minute: workspace %s used %s of its %s tokens in the last minute',
                      p_run.workspace_id, v_used, v_limit),
    'detail',  format('scope=workspace cap=model_tokens_per_min workspace_id=%s used=%s limit=%s estimate=%s '
                      'window_s=60 retry_after_s=%s agent_run=%s', p_run.workspace_id, v_used, v_limit, v_est,
                      v_retry, p_run.id),
    'hint',    format('Wait %s s and ask again (the agent loop waits, heartbeating, without spending an attempt), '
                      'or raise model_tokens_per_min with set_workspace_limits.', v_retry),
    'retry_after_s', v_retry);
end
$$;

ALTER FUNCTION pgflight._token_admission(p_run pgflight.agent_runs, p_limit bigint, p_now timestamp with time zone) OWNER TO pgflight_owner;

-- Name: FUNCTION _token_admission(p_run pgflight.agent_runs, p_limit bigint, p_now timestamp with time zone); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._token_admission(p_run pgflight.agent_runs, p_limit bigint, p_now timestamp with time zone) IS 'Internal: check a model call against the workspace''s model_tokens_per_min and add its estimate; returns null or the ZF013 refusal with retry_after_s.';

-- Name: _token_estimate(pgflight.agent_runs, bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._token_estimate(p_run pgflight.agent_runs, p_limit bigint) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_run.iterations = 0 then
    return 0;
  end if;
  return least(ceil((p_run.input_tokens + p_run.output_tokens)::numeric / p_run.iterations)::bigint, p_limit);
end
$$;

ALTER FUNCTION pgflight._token_estimate(p_run pgflight.agent_runs, p_limit bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION _token_estimate(p_run pgflight.agent_runs, p_limit bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._token_estimate(p_run pgflight.agent_runs, p_limit bigint) IS 'Internal: model tokens a call of this agent is expected to use (its average so far, at most p_limit).';

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

-- Name: _unknown_attempt(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._unknown_attempt(p_attempt_id bigint) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  raise exception using
    errcode = 'ZF003',
    message = format('unknown attempt %s', p_attempt_id),
    hint    = 'Use the attempt_id returned by claim_batch.';
end
$$;

ALTER FUNCTION pgflight._unknown_attempt(p_attempt_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION _unknown_attempt(p_attempt_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._unknown_attempt(p_attempt_id bigint) IS 'Internal: raise ZF003 unknown attempt (the one answer for an attempt unknown or outside the lanes).';

-- Name: _unknown_workspace(text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._unknown_workspace(p_workspace text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  raise exception using errcode = 'ZF003', message = format('unknown workspace %L', left(p_workspace, 200)),
    hint = 'Create it first: select pgflight.create_workspace(name).';
end
$$;

ALTER FUNCTION pgflight._unknown_workspace(p_workspace text) OWNER TO pgflight_owner;

-- Name: FUNCTION _unknown_workspace(p_workspace text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._unknown_workspace(p_workspace text) IS 'Internal: raise ZF003 unknown workspace (the one answer for a name unknown or outside every lane).';

-- Name: _usage_counts_ok(jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._usage_counts_ok(p_usage jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $_$
  select pg_catalog.jsonb_path_match(p_usage, '$.type() == "object"
                             && (!exists($.input_tokens) || $.input_tokens.type() == "null"
                                 || ($.input_tokens.type() == "number" && $.input_tokens >= 0 && $.input_tokens <= 10000000000
                                     && $.input_tokens.floor() == $.input_tokens))
                             && (!exists($.output_tokens) || $.output_tokens.type() == "null"
                                 || ($.output_tokens.type() == "number" && $.output_tokens >= 0 && $.output_tokens <= 10000000000
                                     && $.output_tokens.floor() == $.output_tokens))
                             && (!exists($.cache_creation_input_tokens) || $.cache_creation_input_tokens.type() == "null"
                                 || ($.cache_creation_input_tokens.type() == "number" && $.cache_creation_input_tokens >= 0 && $.cache_creation_input_tokens <= 10000000000
                                     && $.cache_creation_input_tokens.floor() == $.cache_creation_input_tokens))
                             && (!exists($.cache_read_input_tokens) || $.cache_read_input_tokens.type() == "null"
                                 || ($.cache_read_input_tokens.type() == "number" && $.cache_read_input_tokens >= 0 && $.cache_read_input_tokens <= 10000000000
                                     && $.cache_read_input_tokens.floor() == $.cache_read_input_tokens))', silent => true)
$_$;

ALTER FUNCTION pgflight._usage_counts_ok(p_usage jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION _usage_counts_ok(p_usage jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._usage_counts_ok(p_usage jsonb) IS 'Internal (record_model_call): whether usage''s four token counts are absent, null or integers 0 .. 1e10. Inlined: no SET clause.';

-- Name: _usage_extras(jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._usage_extras(p_usage jsonb, OUT cw_1h bigint, OUT searches bigint) RETURNS record
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  cw_1h := pgflight._opt_int(p_usage -> 'cache_creation', 'ephemeral_1h_input_tokens', 0, 0, 10000000000,
                             'usage.cache_creation');
  searches := pgflight._opt_int(p_usage -> 'server_tool_use', 'web_search_requests', 0, 0, 10000000000,
                                'usage.server_tool_use');
end
$$;

ALTER FUNCTION pgflight._usage_extras(p_usage jsonb, OUT cw_1h bigint, OUT searches bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION _usage_extras(p_usage jsonb, OUT cw_1h bigint, OUT searches bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._usage_extras(p_usage jsonb, OUT cw_1h bigint, OUT searches bigint) IS 'Internal: one-hour cache-write tokens and web searches of a usage object (0 when absent); 22023 if malformed.';

-- Name: _vacuum_horizon(); Type: FUNCTION; Schema: pgflight; Owner: pgflight_privileged

CREATE FUNCTION pgflight._vacuum_horizon() RETURNS TABLE(xmin_age integer, held_s double precision, pid integer)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select h.xmin_age, h.held_s, h.pid from (
    select age(a.backend_xmin) as xmin_age,
           extract(epoch from clock_timestamp() - a.xact_start)::double precision as held_s, a.pid
      from pg_stat_activity a
     where a.backend_xmin is not null and a.pid <> pg_backend_pid()
    union all
    select age(p.transaction), extract(epoch from clock_timestamp() - p.prepared)::double precision, null
      from pg_prepared_xacts p
    union all
    select greatest(age(s.xmin), age(s.catalog_xmin)), null, null
      from pg_replication_slots s
     where s.xmin is not null or s.catalog_xmin is not null
  ) h
  order by h.xmin_age desc nulls last
  limit 1
$$;

ALTER FUNCTION pgflight._vacuum_horizon() OWNER TO pgflight_privileged;

-- Name: FUNCTION _vacuum_horizon(); Type: COMMENT; Schema: pgflight; Owner: pgflight_privileged

COMMENT ON FUNCTION pgflight._vacuum_horizon() IS 'Internal: the oldest xmin holding back vacuum (backend, prepared transaction or slot): its age, how long it has been held (s), the backend pid.';

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

-- Name: _workspace_id(text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight._workspace_id(p_workspace text) RETURNS bigint
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_id bigint;
begin
  select w.id into v_id from pgflight.workspaces w where w.name = p_workspace;
  if v_id is null or not pgflight._may('reader', v_id) then
    perform pgflight._unknown_workspace(p_workspace);
  end if;
  return v_id;
end
$$;

ALTER FUNCTION pgflight._workspace_id(p_workspace text) OWNER TO pgflight_owner;

-- Name: FUNCTION _workspace_id(p_workspace text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight._workspace_id(p_workspace text) IS 'Internal: a workspace''s id by name; ZF003 when unknown or outside every lane of the login.';

-- Name: agent_run_of(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.agent_run_of(p_step_id bigint) RETURNS TABLE(agent_run_id bigint, step_id bigint, run_id bigint, model text, system_prompt text, max_iterations integer, max_tool_calls integer, iterations integer, tool_calls integer, input_tokens bigint, output_tokens bigint, cache_creation_tokens bigint, cache_read_tokens bigint, usd numeric, step_status text, result jsonb, created_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- the lane on the agent run's workspace, in the one statement: outside it, no row
  return query
    select r.id, r.step_id, r.run_id, r.model, r.system_prompt, r.max_iterations, r.max_tool_calls, r.iterations,
           r.tool_calls, r.input_tokens, r.output_tokens, r.cache_creation_tokens, r.cache_read_tokens, r.usd,
           a.status, a.result, r.created_at
      from pgflight.agent_runs r
      join pgflight.steps s on s.id = r.step_id
      join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
     where r.step_id = p_step_id and pgflight._may('reader', r.workspace_id);
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
   cross join (select pgflight._lane_workspaces('reader') as ids) ws  -- the login's workspaces
   where a.status = p_status and r.id > p_after
     and (ws.ids is null or exists (select from pgflight.runs x where x.id = r.run_id and x.workspace_id = any (ws.ids)))
   order by r.id
   limit pgflight._check_limit(p_limit)  -- 22023 for a negative limit
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
  -- the lane on the agent run's workspace, in the one statement: outside it, no row
  return query
    select t.iteration, t.seq, t.role, t.block_type, t.tool_use_id, t.tool_name, t.content, t.status, t.tokens,
           t.attempt_id, t.created_at, c.model, c.input_tokens, c.output_tokens, c.cache_creation_tokens,
           c.cache_read_tokens, c.usd, c.stop_reason
      from pgflight.traces t
      left join pgflight.costs c on c.agent_run_id = t.agent_run_id and c.iteration = t.iteration
                                     and not c.lease_lost  -- orphan costs (record_orphan_cost) have no traces
     where t.agent_run_id = p_agent_run_id
       and pgflight._may('reader', (select r.workspace_id from pgflight.agent_runs r where r.id = p_agent_run_id))
     order by t.iteration, t.seq;
end
$$;

ALTER FUNCTION pgflight.agent_transcript(p_agent_run_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION agent_transcript(p_agent_run_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.agent_transcript(p_agent_run_id bigint) IS 'Read: an agent run''s trace rows in order, with per-call costs.';

-- Name: approve(bigint, text, text, text, text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.approve(p_step_id bigint, p_decision text, p_actor text, p_note text DEFAULT NULL::text, p_gate_key text DEFAULT NULL::text, p_payload jsonb DEFAULT NULL::jsonb) RETURNS TABLE(step_id bigint, gate_key text, decision text, applied boolean)
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

ALTER FUNCTION pgflight.approve(p_step_id bigint, p_decision text, p_actor text, p_note text, p_gate_key text, p_payload jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION approve(p_step_id bigint, p_decision text, p_actor text, p_note text, p_gate_key text, p_payload jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.approve(p_step_id bigint, p_decision text, p_actor text, p_note text, p_gate_key text, p_payload jsonb) IS 'Decide an approval gate (approve | reject) with an optional JSON payload the step receives (a tool gate: {"arguments": {...}} or {"message": "..."}); first decision wins. Errors: 22023, ZF003, ZF005, ZF008.';

-- Name: begin_agent_run(bigint, bigint, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.begin_agent_run(p_attempt_id bigint, p_token bigint, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(agent_run_id bigint, created boolean, iterations integer, tool_calls integer, usd numeric, max_iterations integer, max_tool_calls integer)
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

ALTER FUNCTION pgflight.begin_agent_run(p_attempt_id bigint, p_token bigint, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION begin_agent_run(p_attempt_id bigint, p_token bigint, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.begin_agent_run(p_attempt_id bigint, p_token bigint, p_options jsonb) IS 'Start or resume the agent of a held step; returns (agent_run_id, created, totals, caps). Options (docs/options.md): model, system, task, max_iterations, max_tool_calls, max_usd, max_wall_s. Errors: ZF001, ZF002, ZF003, 22023.';

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

ALTER FUNCTION pgflight.cancel_step(p_step_id bigint, p_actor text, p_reason text) OWNER TO pgflight_owner;

-- Name: FUNCTION cancel_step(p_step_id bigint, p_actor text, p_reason text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.cancel_step(p_step_id bigint, p_actor text, p_reason text) IS 'Cancel a step and its subtree; pokes its parent. Errors: ZF003 unknown step.';

-- Name: children_results(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.children_results(p_step_id bigint) RETURNS TABLE(step_key text, step_id bigint, recipe text, status text, attempt_no integer, result jsonb, error jsonb)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- the lane on the step's workspace, in the one statement: outside it, no row, as for an unknown step
  return query
    select s.step_key, s.id, s.recipe, a.status, a.attempt_no, a.result, a.error
      from pgflight.steps s
      join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
     where s.parent_id = p_step_id
       and pgflight._may('reader', (select r.workspace_id from pgflight.steps p join pgflight.runs r on r.id = p.run_id
                                     where p.id = p_step_id))
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

  -- the fair claim across workspaces, with caps, keys, rate limits and pause (internals/_claim_fair),
  -- over the workspaces of the login's worker lane (v_ws; null: every workspace)
  return query select * from pgflight._claim_fair(p_worker_id, p_batch_size, p_lease_s, p_recipes, v_start, v_now, v_ws);
end
$_$;

ALTER FUNCTION pgflight.claim_batch(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION claim_batch(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.claim_batch(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_options jsonb) IS 'Lease up to p_batch_size ready attempts (lease in seconds). Returns at most p_batch_size rows, each with its fencing token, from the login''s workspaces. Options (docs/options.md): start (boolean). Errors: 22023, ZF005, ZF010 unknown worker.';

-- Name: complete_and_claim(bigint, bigint[], bigint[], jsonb[], integer, double precision, text[], jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.complete_and_claim(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_batch_size integer, p_lease_s double precision, p_recipes text[] DEFAULT NULL::text[], p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint, step_key text, attempt_no integer, recipe text, input jsonb, lease_expires_at timestamp with time zone, deadline_at timestamp with time zone, outcome text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- the claim first: the worker row, then attempt rows (the lock order above)
  return query
    select c.attempt_id, c.fencing_token, c.step_id, c.run_id, c.parent_id, c.step_key, c.attempt_no,
           c.recipe, c.input, c.lease_expires_at, c.deadline_at, null::text
      from pgflight.claim_batch(p_worker_id, p_batch_size, p_lease_s, p_recipes, p_options) c;
  return query
    select d.attempt_id, null::bigint, null::bigint, null::bigint, null::bigint, null::text, null::integer,
           null::text, null::jsonb, null::timestamptz, null::timestamptz, d.outcome
      from pgflight.complete_batch(p_attempt_ids, p_tokens, p_results) d;
end
$$;

ALTER FUNCTION pgflight.complete_and_claim(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_batch_size integer, p_lease_s double precision, p_recipes text[], p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION complete_and_claim(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_batch_size integer, p_lease_s double precision, p_recipes text[], p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.complete_and_claim(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_batch_size integer, p_lease_s double precision, p_recipes text[], p_options jsonb) IS 'claim_batch then complete_batch in one transaction: the claimed steps (outcome null), then one outcome per attempt given (succeeded | lease_lost | cancelled | result_refused). Errors: those of claim_batch (22023, ZF005, ZF010) and complete_batch (22023).';

-- Name: complete_batch(bigint[], bigint[], jsonb[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]) RETURNS TABLE(attempt_id bigint, outcome text)
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

ALTER FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]) OWNER TO pgflight_owner;

-- Name: FUNCTION complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]) IS 'Complete many held attempts; per row outcome succeeded | lease_lost | cancelled | result_refused (its result refused: over settings.max_result_bytes or nested deeper than settings.max_json_depth; that step dead-letters alone); an attempt not held by the login''s own workers is lease_lost for its row alone. Errors: 22023 (lengths differ, a NULL).';

-- Name: complete_batch(bigint[], bigint[], text[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results text[]) RETURNS TABLE(attempt_id bigint, outcome text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_json jsonb[];
  v_errors jsonb[];
  v_i integer;
  v_max bigint := (select s.max_result_bytes from pgflight.settings s);
  v_depth integer := (select s.max_json_depth from pgflight.settings s);
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
  begin
    v_json := p_results::jsonb[];  -- one cast for the whole batch
  exception when others then
    v_json := null;
  end;
  if v_json is not null then
    return query select * from pgflight.complete_batch(p_attempt_ids, p_tokens, v_json);
    return;
  end if;
  -- the slow path: element by element, each refusal kept with its SQLSTATE and message
  v_json := array_fill(null::jsonb, array[cardinality(p_results)]);
  v_errors := array_fill(null::jsonb, array[cardinality(p_results)]);
  for v_i in 1 .. cardinality(p_results) loop
    begin
      v_json[v_i] := p_results[v_i]::jsonb;
      if octet_length(v_json[v_i]::text) > v_max then
        v_errors[v_i] := jsonb_build_object('message', format('result too large: %s bytes; the cap is %s bytes (settings.max_result_bytes)',
                                                              octet_length(v_json[v_i]::text), v_max), 'sqlstate', 'ZF005');
      elsif pgflight._json_too_deep(v_json[v_i], v_depth) then
        v_errors[v_i] := jsonb_build_object('message', format('result nests %s levels deep; the cap is %s (settings.max_json_depth)',
                                                              coalesce(pgflight._json_depth(v_json[v_i])::text, 'more than ' || v_depth), v_depth), 'sqlstate', 'ZF005');
      end if;
    exception when others then
      v_errors[v_i] := jsonb_build_object('message', 'result refused by PostgreSQL: ' || sqlerrm, 'sqlstate', sqlstate);
    end;
  end loop;
  return query select * from pgflight._complete_refusing(p_attempt_ids, p_tokens, v_json, v_errors);
end
$$;

ALTER FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results text[]) OWNER TO pgflight_owner;

-- Name: FUNCTION complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results text[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results text[]) IS 'Complete many held attempts, results as JSON text; an element PostgreSQL refuses (NaN, \u0000, too large, too deep) fails only its own step (outcome failed); an attempt not held by the login''s own workers is lease_lost for its row alone. Errors: 22023 (lengths differ, a NULL).';

-- Name: complete_step(bigint, bigint, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb DEFAULT NULL::jsonb) RETURNS TABLE(attempt_id bigint, status text)
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

ALTER FUNCTION pgflight.complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb) IS 'Complete a held attempt with a result. Errors: ZF001 lease lost, ZF002 cancelled, ZF003 unknown, ZF005 result too large, ZF012 another login''s attempt, 22023 NULL attempt id or token.';

-- Name: complete_step_text(bigint, bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.complete_step_text(p_attempt_id bigint, p_token bigint, p_result text) RETURNS TABLE(attempt_id bigint, status text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_json jsonb;
  v_error jsonb;
  v_max bigint := (select s.max_result_bytes from pgflight.settings s);
  v_outcome text;
begin
  begin
    v_json := p_result::jsonb;
    if octet_length(v_json::text) > v_max then
      v_error := jsonb_build_object(
        'message', format('result too large: %s bytes; the cap is %s bytes (settings.max_result_bytes)',
                          octet_length(v_json::text), v_max),
        'sqlstate', 'ZF005');
    end if;
  exception when others then
    v_error := jsonb_build_object('message', 'result refused by PostgreSQL: ' || sqlerrm, 'sqlstate', sqlstate);
  end;
  if v_error is null then
    return query select c.attempt_id, c.status from pgflight.complete_step(p_attempt_id, p_token, v_json) c;
    return;
  end if;
  select r.outcome into v_outcome
    from pgflight._complete_refusing(array[p_attempt_id], array[p_token], array[null::jsonb], array[v_error]) r;
  if v_outcome is distinct from 'result_refused' then
    perform pgflight._reject_write(p_attempt_id, p_token, 'complete_step_text');
  end if;
  return query select p_attempt_id, 'result_refused'::text;
end
$$;

ALTER FUNCTION pgflight.complete_step_text(p_attempt_id bigint, p_token bigint, p_result text) OWNER TO pgflight_owner;

-- Name: FUNCTION complete_step_text(p_attempt_id bigint, p_token bigint, p_result text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.complete_step_text(p_attempt_id bigint, p_token bigint, p_result text) IS 'Complete a held attempt with its result as JSON text: a result PostgreSQL refuses (\u0000, NaN, malformed, over max_result_bytes) dead-letters the step (outcome result_refused, not retried). Errors: ZF001, ZF002, ZF003, ZF012.';

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
  perform pgflight._require_json_depth(p_result, 'tool result');
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
  v_f record;  -- the fence's row: the agent run, whether a wall-time cap of its reservation ran out, the depth cap
  v_wall_ran_out boolean;  -- a wall-time cap of the budgets of the run's reservation ran out
  v_depth integer;  -- settings.max_json_depth
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
  -- without locks: wall time only grows; used below when that reservation is kept) and the
  -- settings' JSON depth cap
  select r as run,
         exists (select from pgflight.budgets b
                  where b.id = any (r.reserved_budget_ids) and b.max_wall_s is not null
                    and v_now > b.started_at + make_interval(secs => b.max_wall_s)) as wall_ran_out,
         (select s.max_json_depth from pgflight.settings s) as max_json_depth
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
    v_wall_ran_out := v_f.wall_ran_out;
    v_depth := v_f.max_json_depth;
  else  -- ZF001 / ZF002 / ZF003 / ZF012 (found on a second look, the caps are read again here)
    v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'complete_tool_calls');
    select s.max_json_depth,
           exists (select from pgflight.budgets b
                    where b.id = any (v_run.reserved_budget_ids) and b.max_wall_s is not null
                      and v_now > b.started_at + make_interval(secs => b.max_wall_s))
      into v_depth, v_wall_ran_out
      from pgflight.settings s;
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
  if not (pg_column_size(p_results) < 8 * (v_depth + 1) and pg_column_compression(p_results) is null) then
    perform pgflight._require_json_depth(p_results, 'tool results');  -- ZF005
  end if;
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
    if v_wall_ran_out then
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

ALTER FUNCTION pgflight.complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_results jsonb, p_next_iteration integer, p_est_usd numeric) OWNER TO pgflight_owner;

-- Name: FUNCTION complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_results jsonb, p_next_iteration integer, p_est_usd numeric); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_results jsonb, p_next_iteration integer, p_est_usd numeric) IS 'Store an iteration''s tool results and admit the next model call, in one transaction; a refused admission is returned (reserved = false, refusal), not raised. Errors: ZF003, ZF001, ZF002, 22023.';

-- Name: cost_by_day(integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.cost_by_day(p_days integer DEFAULT 14) RETURNS TABLE(workspace text, day date, model_calls bigint, input_tokens bigint, output_tokens bigint, usd numeric, cap_usd numeric, reserved_usd numeric)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_from date;
  v_lanes bigint[] := pgflight._lane_workspaces('reader');  -- null: every workspace
begin
  -- checked before the first day is computed: 2^31-1 days back is out of the date range (22008)
  perform pgflight._require_limit('days', p_days, 92);
  v_from := (pgflight._now() at time zone 'UTC')::date - (p_days - 1);
  return query
  with spend as (
    select c.workspace_id, (c.at at time zone 'UTC')::date as day, count(*) as calls,
           sum(c.input_tokens) as input_tokens, sum(c.output_tokens) as output_tokens, sum(c.usd) as usd
      from pgflight.costs c
     where c.at >= v_from::timestamp at time zone 'UTC'
       and (v_lanes is null or c.workspace_id = any(v_lanes))
     group by 1, 2
  )
  select w.name, sp.day, sp.calls, sp.input_tokens::bigint, sp.output_tokens::bigint, sp.usd,
         w.daily_usd_cap, b.reserved_usd
    from spend sp
    join pgflight.workspaces w on w.id = sp.workspace_id
    left join pgflight.budgets b on b.scope = 'workspace_day' and b.workspace_id = sp.workspace_id and b.day = sp.day
   order by sp.day desc, w.name;
end
$$;

ALTER FUNCTION pgflight.cost_by_day(p_days integer) OWNER TO pgflight_owner;

-- Name: FUNCTION cost_by_day(p_days integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.cost_by_day(p_days integer) IS 'Read: model calls, tokens and USD by workspace and UTC day, with the daily cap. Errors: 22023.';

-- Name: create_workspace(text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.create_workspace(p_name text, p_options jsonb DEFAULT '{}'::jsonb) RETURNS bigint
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

ALTER FUNCTION pgflight.create_workspace(p_name text, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION create_workspace(p_name text, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.create_workspace(p_name text, p_options jsonb) IS 'Create or update a workspace by name; returns its id. options: daily_usd_cap, max_run_usd (USD). Errors: 22023.';

-- Name: dead_letter_page(bigint, integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.dead_letter_page(p_after bigint DEFAULT NULL::bigint, p_limit integer DEFAULT 50) RETURNS TABLE(attempt_id bigint, step_id bigint, run_id bigint, workspace text, step_key text, recipe text, attempt_no integer, failed_attempts integer, reason text, error jsonb, finished_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_lanes bigint[] := pgflight._lane_workspaces('reader');  -- null: every workspace
begin
  perform pgflight._require_limit('limit', p_limit, 500);
  return query
  select a.id, s.id, s.run_id, w.name, s.step_key, s.recipe, a.attempt_no, s.failed_attempts, a.reason,
         a.error, a.finished_at
    from pgflight.step_attempts a
    join pgflight.steps s on s.id = a.step_id and s.last_attempt_no = a.attempt_no
    join pgflight.runs r on r.id = s.run_id
    join pgflight.workspaces w on w.id = r.workspace_id
   where a.status = 'dead_letter' and (p_after is null or a.id < p_after)
     and (v_lanes is null or r.workspace_id = any(v_lanes))
   order by a.id desc
   limit p_limit;
end
$$;

ALTER FUNCTION pgflight.dead_letter_page(p_after bigint, p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION dead_letter_page(p_after bigint, p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.dead_letter_page(p_after bigint, p_limit integer) IS 'Read: dead-lettered steps with their last error, newest first, keyset-paged by attempt id. Errors: 22023.';

-- Name: deregister_worker(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.deregister_worker(p_worker_id bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_held record;
begin
  update pgflight.workers set stopped_at = coalesce(stopped_at, pgflight._now())
   where id = p_worker_id and login = session_user;
  if not found then
    raise exception using errcode = 'ZF010', message = format('unknown worker %s', p_worker_id),
      detail = format('no worker %s registered by login %s', p_worker_id, session_user),
      hint = 'Deregister only the worker ids your own register_worker returned.';
  end if;
  -- a statement of its own, after the update: it sees what a claim committed while we waited.
  -- The leased rows through step_attempts_leased_ws_idx (live leases only), not a scan by worker;
  -- locked here, so one a completion ended while we waited for its lock is read again and left
  -- out (the release below then never meets a lost lease, ZF001).
  for v_held in
    select a.id, a.fencing_token from pgflight.step_attempts a
     where a.worker_id = p_worker_id and a.status in ('claimed', 'running', 'cancel_requested')
     order by a.id
       for update of a
  loop
    perform pgflight.release_step(v_held.id, v_held.fencing_token, 'worker deregistered');
  end loop;
end
$$;

ALTER FUNCTION pgflight.deregister_worker(p_worker_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION deregister_worker(p_worker_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.deregister_worker(p_worker_id bigint) IS 'Mark a worker of this login stopped and release the leases it still holds (no attempt spent). Errors: ZF010.';

-- Name: drop_tool_policy(text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.drop_tool_policy(p_workspace text, p_tool text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint;
begin
  if p_workspace is null or p_tool is null then
    raise exception using errcode = '22023',
      message = format('drop_tool_policy refused: %s is required', case when p_workspace is null then 'the workspace' else 'the tool name' end),
      hint = 'Pass a workspace and a tool name (or ''*'').';
  end if;
  v_ws := pgflight._workspace_id(p_workspace);
  perform pgflight._require_lane('operator', v_ws, 'drop_tool_policy');
  delete from pgflight.tool_policies t where t.workspace_id = v_ws and t.tool_name = p_tool;
  return found;
end
$$;

ALTER FUNCTION pgflight.drop_tool_policy(p_workspace text, p_tool text) OWNER TO pgflight_owner;

-- Name: FUNCTION drop_tool_policy(p_workspace text, p_tool text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.drop_tool_policy(p_workspace text, p_tool text) IS 'Remove a workspace''s policy for a tool (or ''*''); true when one was removed. Errors: 22023, ZF003, ZF012.';

-- Name: emit_event(text, text, text, jsonb, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.emit_event(p_workspace text, p_name text, p_key text, p_payload jsonb DEFAULT NULL::jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(event_id text, emitted boolean, woken integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_opts jsonb := pgflight._check_options('emit_event', p_options);  -- docs/options.md
  v_event_id text := pgflight._opt_string(v_opts, 'event_id', null, 1, 200, 'emit_event');
  v_settings pgflight.settings;
  v_ws bigint;
  v_row pgflight.emitted_events;
  v_wait record;
  v_woken integer := 0;
begin
  if p_workspace is null or p_name is null or btrim(p_name) = '' or p_key is null then
    raise exception using errcode = '22023',
      message = format('emit_event refused: %s is required',
                       case when p_workspace is null then 'the workspace'
                            when p_name is null or btrim(p_name) = '' then 'the event name' else 'the event key' end),
      hint = 'Pass a workspace name, an event name and an event key (the key may be empty, not null).';
  end if;
  select * into v_settings from pgflight.settings;
  perform pgflight._require_cap('max_name_bytes', v_settings.max_name_bytes, octet_length(p_name), 'event name (bytes)');
  perform pgflight._require_cap('max_name_bytes', v_settings.max_name_bytes, octet_length(p_key), 'event key (bytes)');
  perform pgflight._require_cap('max_event_payload_bytes', v_settings.max_event_payload_bytes,
                                octet_length(p_payload::text), 'event payload (bytes)');
  perform pgflight._require_json_depth(p_payload, 'event payload');
  select w.id into v_ws from pgflight.workspaces w where w.name = p_workspace;
  if not found or not (pgflight._may('operator', v_ws) or pgflight._may('worker', v_ws)) then
    -- one answer for a workspace that does not exist and one this login has no lane on
    raise exception using errcode = 'ZF003', message = format('unknown workspace %L', left(p_workspace, 200)),
      hint = 'Emit in a workspace where your login is an operator or a worker.';
  end if;
  v_event_id := coalesce(v_event_id, pg_catalog.gen_random_uuid()::text);
  perform pgflight._lock_event_channel(v_ws, p_name, p_key);

  insert into pgflight.emitted_events as e (workspace_id, event_id, name, key, payload, emitted_at, expires_at, emitted_by)
  values (v_ws, v_event_id, p_name, p_key, p_payload, v_now,
          v_now + make_interval(secs => v_settings.event_retention_s), session_user::text)
  on conflict on constraint emitted_event_id_is_unique_per_workspace do nothing
  returning e.* into v_row;
  if not found then
    select e.* into v_row from pgflight.emitted_events e where e.workspace_id = v_ws and e.event_id = v_event_id;
    if v_row.name = p_name and v_row.key = p_key and v_row.payload is not distinct from p_payload then
      return query select v_event_id, false, 0;
      return;
    end if;
    raise exception using errcode = 'ZF004',
      message = format('event id %L already names another event', v_event_id),
      detail = 'An event id is emitted once per workspace; this one was emitted with another name, key or payload.',
      hint = 'Use a new event id for a new event.';
  end if;
  for v_wait in
    select w.id from pgflight.waits w
     where w.workspace_id = v_ws and w.event_name = p_name and w.event_key = p_key
       and w.kind = 'event' and w.outcome is null
     order by w.id
       for update
  loop
    if pgflight._resolve_wait(v_wait.id, 'received', p_payload, v_event_id, session_user::text) then
      v_woken := v_woken + 1;
    end if;
  end loop;
  return query select v_event_id, true, v_woken;
end
$$;

ALTER FUNCTION pgflight.emit_event(p_workspace text, p_name text, p_key text, p_payload jsonb, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION emit_event(p_workspace text, p_name text, p_key text, p_payload jsonb, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.emit_event(p_workspace text, p_name text, p_key text, p_payload jsonb, p_options jsonb) IS 'Emit an event (name, key, payload) in a workspace: kept for settings.event_retention_s, resolves every pending wait for it and requeues the steps parked on them; idempotent by options.event_id. Returns the event id, whether it was new, how many waits it woke. Errors: 22023, ZF003, ZF004, ZF005.';

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

ALTER FUNCTION pgflight.enforce_budgets(p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION enforce_budgets(p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.enforce_budgets(p_limit integer) IS 'Sweep: release reservations of lapsed attempts; prune model-token windows; cancel trees over their USD or wall-time cap. Returns the count.';

-- Name: expire_approvals(integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.expire_approvals(p_limit integer DEFAULT 1000) RETURNS integer
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

ALTER FUNCTION pgflight.expire_approvals(p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION expire_approvals(p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.expire_approvals(p_limit integer) IS 'Sweep: apply default decisions to expired gates; returns how many.';

-- Name: expire_waits(integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.expire_waits(p_limit integer DEFAULT 1000) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_row record;
  v_count integer := 0;
  v_deleted integer;
begin
  perform pgflight._require_lane('operator', null, 'expire_waits');  -- acts on every workspace
  perform pgflight._check_limit(p_limit);
  for v_row in
    select w.id, w.kind, w.default_payload from pgflight.waits w
     where w.outcome is null and w.due_at <= v_now
     order by w.due_at limit p_limit
       for update skip locked
  loop
    begin
      perform pgflight._resolve_wait(v_row.id, case v_row.kind when 'timer' then 'elapsed' else 'timed_out' end,
                                     case when v_row.kind = 'event' then v_row.default_payload end, null,
                                     'expire_waits');
      v_count := v_count + 1;
    exception when others then
      raise warning 'pgflight: expire_waits skipped wait %: % (SQLSTATE %)', v_row.id, sqlerrm, sqlstate
        using hint = 'The next pass tries it again; the other waits of this pass were resolved.';
    end;
  end loop;
  delete from pgflight.emitted_events e
   where e.id in (select x.id from pgflight.emitted_events x where x.expires_at <= v_now
                   order by x.expires_at limit p_limit for update skip locked);
  get diagnostics v_deleted = row_count;
  delete from pgflight.event_channels c
   where (c.workspace_id, c.name, c.key) in (
     select x.workspace_id, x.name, x.key from pgflight.event_channels x
      where x.touched_at <= v_now - make_interval(secs => (select s.event_retention_s from pgflight.settings s))
        and not exists (select from pgflight.waits w
                         where w.workspace_id = x.workspace_id and w.event_name = x.name and w.event_key = x.key
                           and w.kind = 'event' and w.outcome is null)
        and not exists (select from pgflight.emitted_events e
                         where e.workspace_id = x.workspace_id and e.name = x.name and e.key = x.key)
      order by x.touched_at limit p_limit
        for update skip locked);
  return v_count + v_deleted;
end
$$;

ALTER FUNCTION pgflight.expire_waits(p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION expire_waits(p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.expire_waits(p_limit integer) IS 'Sweep: resolve due timers (elapsed) and timed-out event waits (default payload), requeue their steps; delete emitted events past their retention and unused channel rows; returns waits resolved + events deleted.';

-- Name: fail_step(bigint, bigint, jsonb, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(attempt_id bigint, outcome text, next_attempt_id bigint, available_after timestamp with time zone)
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

ALTER FUNCTION pgflight.fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb) IS 'Fail a held attempt: retry with backoff or dead letter at the ceiling. Options (docs/options.md): retryable (boolean, default true), retry_after_s (seconds, 0 to 2592000). Errors: ZF001, ZF002, ZF003, ZF005, ZF012, 22023.';

-- Name: fail_step_text(bigint, bigint, text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.fail_step_text(p_attempt_id bigint, p_token bigint, p_error text, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(attempt_id bigint, outcome text, next_attempt_id bigint, available_after timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_error jsonb;
  v_max bigint := (select s.max_error_bytes from pgflight.settings s);
begin
  begin
    v_error := p_error::jsonb;
    if octet_length(v_error::text) > v_max then
      raise exception using errcode = 'ZF005',
        message = format('error too large: %s bytes; the cap is %s bytes (settings.max_error_bytes)',
                         octet_length(v_error::text), v_max);
    end if;
  exception when others then
    v_error := jsonb_build_object('message', 'error refused by PostgreSQL: ' || sqlerrm, 'sqlstate', sqlstate,
                                  'raw', left(p_error, 1000));
  end;
  return query select f.attempt_id, f.outcome, f.next_attempt_id, f.available_after
                 from pgflight.fail_step(p_attempt_id, p_token, v_error, p_options) f;
end
$$;

ALTER FUNCTION pgflight.fail_step_text(p_attempt_id bigint, p_token bigint, p_error text, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION fail_step_text(p_attempt_id bigint, p_token bigint, p_error text, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.fail_step_text(p_attempt_id bigint, p_token bigint, p_error text, p_options jsonb) IS 'Fail a held attempt with its error as JSON text: an error PostgreSQL refuses (\u0000, NaN, malformed, over max_error_bytes) is stored as a message with its first characters. Options and errors: fail_step''s.';

-- Name: find_effect(bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.find_effect(p_step_id bigint, p_key text) RETURNS TABLE(effect_id bigint, result jsonb, attempt_id bigint, recorded_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- the lane on the step's workspace, in the one statement: outside it, no row, as for an unknown step
  return query
    select e.id, e.result, e.attempt_id, e.recorded_at
      from pgflight.effects e
     where e.step_id = p_step_id and e.effect_key = p_key
       and pgflight._may('reader', (select r.workspace_id from pgflight.steps s join pgflight.runs r on r.id = s.run_id
                                     where s.id = p_step_id));
end
$$;

ALTER FUNCTION pgflight.find_effect(p_step_id bigint, p_key text) OWNER TO pgflight_owner;

-- Name: FUNCTION find_effect(p_step_id bigint, p_key text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.find_effect(p_step_id bigint, p_key text) IS 'The receipt of a step''s effect by key: (effect_id, result, attempt_id, recorded_at), or no row.';

-- Name: fire_schedules(integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.fire_schedules(p_limit integer DEFAULT 100) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_s record;
  v_fire timestamptz;
  v_next timestamptz;
  v_busy boolean;
  v_outcome text;
  v_run bigint;
  v_error jsonb;
  v_count integer := 0;
begin
  perform pgflight._require_lane('operator', null, 'fire_schedules');  -- acts on every workspace
  perform pgflight._check_limit(p_limit);  -- a negative LIMIT would raise 2201W below
  -- queue_one firings whose previous run has ended
  for v_s in
    select s.*, w.name as workspace from pgflight.schedules s join pgflight.workspaces w on w.id = s.workspace_id
     where s.pending_fire_at is not null
       and not exists (select from pgflight.runs r where r.id = s.last_run_id and r.status = 'running')
     order by s.pending_fire_at
     limit p_limit
       for update of s skip locked
  loop
    v_run := pgflight._fire_schedule(v_s.id, v_s.workspace, v_s.name, v_s.recipe, v_s.input, v_s.run_options,
                                     v_s.pending_fire_at);
    update pgflight.schedules s set pending_fire_at = null, last_run_id = coalesce(v_run, s.last_run_id)
     where s.id = v_s.id;
    v_count := v_count + 1;
  end loop;

  for v_s in
    select s.*, w.name as workspace from pgflight.schedules s join pgflight.workspaces w on w.id = s.workspace_id
     where s.next_fire_at <= v_now
     order by s.next_fire_at
     limit p_limit
       for update of s skip locked
  loop
    v_fire := v_s.next_fire_at;
    v_next := pgflight._cron_next(v_s.seconds, v_s.minutes, v_s.hours, v_s.days, v_s.months, v_s.weekdays,
                                  v_s.any_day, v_s.any_weekday, v_s.time_zone, v_now);
    v_busy := exists (select from pgflight.runs r where r.id = v_s.last_run_id and r.status = 'running');
    v_run := null;
    v_outcome := case when not v_busy or v_s.overlap = 'allow' then 'submitted'
                      when v_s.overlap = 'skip' then 'skipped' else 'queued' end;
    insert into pgflight.schedule_fires (schedule_id, fire_at, fired_at, outcome, missed_until)
    values (v_s.id, v_fire, v_now, v_outcome,
            -- more than this one firing fell due: they are all this run
            case when pgflight._cron_next(v_s.seconds, v_s.minutes, v_s.hours, v_s.days, v_s.months, v_s.weekdays,
                                          v_s.any_day, v_s.any_weekday, v_s.time_zone, v_fire) <= v_now
                 then v_now end)
    on conflict on constraint schedule_fires_pkey do nothing;
    if found then
      if v_outcome = 'submitted' then
        v_run := pgflight._fire_schedule(v_s.id, v_s.workspace, v_s.name, v_s.recipe, v_s.input, v_s.run_options, v_fire);
      end if;
      v_count := v_count + 1;
    end if;
    update pgflight.schedules s
       set next_fire_at = v_next, last_fire_at = v_fire, last_run_id = coalesce(v_run, s.last_run_id),
           pending_fire_at = case when v_outcome = 'queued' then v_fire else s.pending_fire_at end
     where s.id = v_s.id;
  end loop;
  return v_count;
end
$$;

ALTER FUNCTION pgflight.fire_schedules(p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION fire_schedules(p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.fire_schedules(p_limit integer) IS 'Sweep: fire due schedules once each (by schedule and fire time), with catch-up and overlap policies; returns firings decided. Errors: 22023 negative p_limit, ZF012.';

-- Name: fork_agent(bigint, integer, jsonb, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.fork_agent(p_step_id bigint, p_at_iteration integer, p_patch jsonb, p_reason text) RETURNS TABLE(run_id bigint, step_id bigint, attempt_id bigint, agent_run_id bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_settings pgflight.settings;
  v_patch jsonb;
  v_results jsonb;
  v_step record;
  v_ws record;
  v_orig pgflight.agent_runs;
  v_input jsonb;
  v_size bigint;
  v_run bigint;
  v_new_step bigint;
  v_attempt bigint;
  v_agent bigint;
  v_ids bigint[];
  v_tool_calls integer;
begin
  if p_step_id is null then
    raise exception using errcode = '22023', message = 'step is required',
      hint = 'Pass the id of an agent step (pgflight.agent_run_of(step) finds its agent run).';
  end if;
  if p_reason is null or btrim(p_reason) = '' or length(p_reason) > 1000 then
    raise exception using errcode = '22023', message = 'a reason of 1 to 1000 characters is required',
      detail = format('got %s', coalesce(length(p_reason) || ' characters', 'NULL')),
      hint = 'Say why the agent is forked; the reason is kept in the events log.';
  end if;
  if p_at_iteration is null or p_at_iteration < 1 then
    raise exception using errcode = '22023', message = 'at_iteration must be 1 or more',
      detail = format('got %s', coalesce(p_at_iteration::text, 'NULL')),
      hint = 'The fork asks the model for this iteration again; 1 re-runs the agent from its task.';
  end if;
  select * into v_settings from pgflight.settings;
  v_patch := pgflight._fork_agent_patch(p_patch, v_settings.max_input_bytes);
  v_results := coalesce(v_patch -> 'tool_results', '{}');

  perform pgflight._require_lane_on_step('operator', p_step_id, 'fork_agent');
  -- the original's run first, FOR KEY SHARE, as replay_from: a purge holding it is waited for
  perform from pgflight.runs r
   where r.id = (select s.run_id from pgflight.steps s where s.id = p_step_id)
     for key share of r;
  select s.id, s.run_id, s.recipe, s.input, s.priority, s.max_attempts, s.backoff, s.lease_s, s.max_runtime_s,
         r.workspace_id
    into v_step
    from pgflight.steps s join pgflight.runs r on r.id = s.run_id where s.id = p_step_id;
  if not found then
    raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
  end if;
  select a.* into v_orig from pgflight.agent_runs a where a.step_id = p_step_id for share;
  if not found then
    raise exception using errcode = 'ZF006', message = format('step %s has no agent run', p_step_id),
      detail = format('recipe %s; an agent run starts with the step''s first begin_agent_run', v_step.recipe),
      hint = 'Fork an agent step that has made at least one model call.';
  end if;
  if p_at_iteration > v_orig.iterations then
    raise exception using errcode = '22023',
      message = format('at_iteration must be from 1 to %s', greatest(v_orig.iterations, 1)),
      detail = format('agent run %s has recorded %s iterations; got %s', v_orig.id, v_orig.iterations, p_at_iteration),
      hint = 'Fork at an iteration the original has made (its model call is asked again, with the patch).';
  end if;
  if jsonb_typeof(v_step.input) <> 'object' then
    raise exception using errcode = 'ZF006', message = format('the input of step %s is not a JSON object', p_step_id),
      detail = format('got a JSON %s', jsonb_typeof(v_step.input)),
      hint = 'Only an agent step whose input is an object (the agent recipe''s) can be patched and forked.';
  end if;
  perform pgflight._fork_agent_require_results(v_orig.id, p_at_iteration - 1, v_results);
  v_input := v_step.input || (v_patch - 'tool_results');
  v_size := octet_length(v_input::text);
  if v_size > v_settings.max_input_bytes then
    raise exception using errcode = 'ZF005', message = 'patched input too large',
      detail = format('the fork''s input is %s bytes; settings.max_input_bytes is %s', v_size, v_settings.max_input_bytes),
      hint = 'Patch less, or raise settings.max_input_bytes.';
  end if;

  -- the fork: a run of its own (its own budget), one root step, one queued attempt
  select w.max_run_usd into v_ws from pgflight.workspaces w where w.id = v_step.workspace_id;
  v_new_step := nextval('pgflight.steps_id_seq'::regclass);
  insert into pgflight.runs (workspace_id, recipe, input_hash, submitted_by, options, max_usd, created_at, root_step_id)
  values (v_step.workspace_id, v_step.recipe, encode(sha256(convert_to(v_input::text, 'UTF8')), 'hex'),
          session_user::text, jsonb_build_object('forked_from_step', p_step_id, 'forked_at', p_at_iteration),
          v_ws.max_run_usd, v_now, v_new_step)
  returning id into v_run;
  insert into pgflight.steps (id, run_id, parent_id, depth, step_key, recipe, input, priority, max_attempts,
                              backoff, lease_s, max_runtime_s, created_at)
  values (v_new_step, v_run, null, 0, 'root', v_step.recipe, v_input, v_step.priority, v_step.max_attempts,
          v_step.backoff, v_step.lease_s, v_step.max_runtime_s, v_now);
  insert into pgflight.step_attempts (step_id, run_id, attempt_no, recipe, priority, status, available_after, created_at,
                                      workspace_id, queue_event_id)
  values (v_new_step, v_run, 1, v_step.recipe, v_step.priority, 'queued', v_now, v_now,
          v_step.workspace_id, nextval('pgflight.events_id_seq'))
  returning id into v_attempt;

  -- its budgets, as begin_agent_run makes them for a root agent
  v_ids := pgflight._fork_agent_budgets(v_step.workspace_id, v_run, v_new_step, v_ws.max_run_usd,
                                        coalesce((v_patch ->> 'max_usd')::numeric, (v_orig.options ->> 'max_usd')::numeric),
                                        coalesce((v_patch ->> 'max_wall_s')::double precision,
                                                 (v_orig.options ->> 'max_wall_s')::double precision),
                                        v_now);

  select count(*) into v_tool_calls from pgflight.traces t
   where t.agent_run_id = v_orig.id and t.iteration between 1 and p_at_iteration - 1
     and t.block_type = 'tool_use' and t.seq < pgflight._seq_band_tool_results();
  insert into pgflight.agent_runs (step_id, run_id, workspace_id, model, system_prompt, system_prompt_hash,
                                   max_iterations, max_tool_calls, iterations, tool_calls, budget_ids, options,
                                   forked_from, forked_at, created_at, updated_at)
  values (v_new_step, v_run, v_step.workspace_id, coalesce(v_patch ->> 'model', v_orig.model),
          coalesce(v_patch ->> 'system', v_orig.system_prompt),
          encode(sha256(convert_to(coalesce(v_patch ->> 'system', v_orig.system_prompt), 'UTF8')), 'hex'),
          coalesce((v_patch ->> 'max_iterations')::integer, v_orig.max_iterations),
          coalesce((v_patch ->> 'max_tool_calls')::integer, v_orig.max_tool_calls),
          p_at_iteration - 1, v_tool_calls, v_ids,
          v_orig.options || (v_patch - array['tool_results', 'provider', 'tools', 'max_tokens']),
          v_orig.id, p_at_iteration, v_now, v_now)
  returning id into v_agent;

  -- the reused iterations: the task, each response, the results the next call was sent, the costs
  perform pgflight._fork_agent_copy_iterations(v_orig.id, p_at_iteration, v_results, v_agent, v_new_step, v_run,
                                               v_step.workspace_id, v_now);

  perform pgflight._event(v_run, v_new_step, v_attempt, null, 'queued', null, 'forked', session_user::text,
                          jsonb_build_object('note', p_reason, 'from_step', p_step_id, 'from_agent_run', v_orig.id,
                                             'at_iteration', p_at_iteration,
                                             'patched', (select coalesce(jsonb_agg(k order by k), '[]')
                                                           from jsonb_object_keys(v_patch) k)));
  perform pgflight._event(v_step.run_id, p_step_id, null, null, null, null, 'fork_made', session_user::text,
                          jsonb_build_object('note', p_reason, 'fork_step', v_new_step, 'fork_run', v_run,
                                             'fork_agent_run', v_agent, 'at_iteration', p_at_iteration));
  perform pgflight._notify_ready();
  return query select v_run, v_new_step, v_attempt, v_agent;
end
$$;

ALTER FUNCTION pgflight.fork_agent(p_step_id bigint, p_at_iteration integer, p_patch jsonb, p_reason text) OWNER TO pgflight_owner;

-- Name: FUNCTION fork_agent(p_step_id bigint, p_at_iteration integer, p_patch jsonb, p_reason text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.fork_agent(p_step_id bigint, p_at_iteration integer, p_patch jsonb, p_reason text) IS 'Fork an agent at iteration k (1 .. its iterations): a new run whose agent reuses iterations 0 .. k-1 at USD 0 and asks the model from k on with the patch (docs/options.md, scope fork_agent: system, model, provider, tools, max_tokens, max_iterations, max_tool_calls, max_usd (USD), max_wall_s (seconds), tool_results {tool_use id: string or content blocks}); its own budget; audited in the events log with the reason. Returns (run_id, step_id, attempt_id, agent_run_id). Errors: 22023, ZF003, ZF005, ZF006, ZF012.';

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

ALTER FUNCTION pgflight.heartbeat(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[]) OWNER TO pgflight_owner;

-- Name: FUNCTION heartbeat(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.heartbeat(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[]) IS 'Renew the leases a worker holds; per attempt held | cancelled | lease_lost. Errors: 22023 (lengths differ, a NULL), ZF010.';

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

ALTER FUNCTION pgflight.install_schedules(p_interval_s integer) OWNER TO pgflight_owner;

-- Name: FUNCTION install_schedules(p_interval_s integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.install_schedules(p_interval_s integer) IS 'Register the sweep (with retention) and cron-history jobs with pg_cron (1.4 or >= 1.5), run as pgflight_cron; idempotent. Errors: ZF011.';

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
                                   and not c.lease_lost  -- orphan costs (record_orphan_cost) have no traces
     where t.agent_run_id = v_run.id
     order by t.iteration, t.seq;
end
$$;

ALTER FUNCTION pgflight.load_transcript(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION load_transcript(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.load_transcript(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint) IS 'Resume: mark in-flight tool calls interrupted and return the transcript in order. Errors: ZF001, ZF002, ZF003.';

-- Name: maintain_partitions(integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.maintain_partitions(p_limit integer DEFAULT 10000) RETURNS TABLE(partition_name text, action text, moved_rows bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v_now timestamptz := pgflight._now();
  v_today date := (pgflight._now() at time zone 'UTC')::date;
  v_keep double precision;
  v_ahead integer;
  v_cut timestamptz;
  v_day date;
  v_lo timestamptz;
  v_hi timestamptz;
  v_name text;
  v_rows bigint;
  v_workers_keep double precision;
begin
  perform pgflight._require_lane('operator', null, 'maintain_partitions');  -- acts on every workspace
  perform pgflight._check_limit(p_limit);
  select s.events_keep_s, s.partitions_ahead_days into v_keep, v_ahead from pgflight.settings s;
  v_cut := v_now - make_interval(secs => v_keep);

  -- 1. the days ahead
  for v_day in select d::date from generate_series(v_today, v_today + v_ahead, interval '1 day') d loop
    v_name := 'events_' || to_char(v_day, 'YYYYMMDD');
    v_lo := v_day::timestamp at time zone 'UTC';
    v_hi := (v_day + 1)::timestamp at time zone 'UTC';
    continue when to_regclass('pgflight.' || v_name) is not null or v_hi <= v_cut;
    begin
      perform set_config('lock_timeout', '200ms', true);
      execute format('create table pgflight.%I (like pgflight.events including defaults including constraints)', v_name);
      execute format('with m as (delete from pgflight.events_default e where e.at >= %L and e.at < %L returning e.*) '
                     'insert into pgflight.%I select * from m', v_lo, v_hi, v_name);
      get diagnostics v_rows = row_count;
      execute format('alter table pgflight.events attach partition pgflight.%I for values from (%L) to (%L)',
                     v_name, v_lo, v_hi);
      return query select v_name, 'created'::text, v_rows;
    exception when lock_not_available then
      null;  -- the next call creates it
    end;
  end loop;

  -- 2. the days past retention
  for v_name, v_hi in
    select c.relname::text, (to_date(substr(c.relname, 8), 'YYYYMMDD') + 1)::timestamp at time zone 'UTC'
      from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = 'pgflight.events'::regclass and c.relname ~ '^events_[0-9]{8}$'
     order by c.relname
  loop
    continue when v_hi > v_cut;
    begin
      perform set_config('lock_timeout', '200ms', true);
      execute format('alter table pgflight.events detach partition pgflight.%I', v_name);
      execute format('drop table pgflight.%I', v_name);
      return query select v_name, 'dropped'::text, null::bigint;
    exception when lock_not_available then
      null;  -- the next call drops it
    end;
  end loop;

  -- 3. strays of the default partition past retention, bounded
  delete from pgflight.events_default e
   where e.ctid = any (array(select d.ctid from pgflight.events_default d where d.at < v_cut limit p_limit));
  get diagnostics v_rows = row_count;
  if v_rows > 0 then
    return query select 'events_default'::text, 'purged'::text, v_rows;
  end if;

  -- 4-5. traces and costs by agent run ids; streams and stream_chunks by run ids (tables/streams,
  -- absent until that change is deployed)
  return query select * from pgflight._maintain_id_partitions(array['traces', 'costs'], 'agent_runs',
                                                               (select s.agent_runs_per_partition from pgflight.settings s),
                                                               p_limit);
  if to_regclass('pgflight.stream_chunks') is not null then
    return query select * from pgflight._maintain_id_partitions(
      array['streams', 'stream_chunks'], 'runs',
      (select (to_jsonb(s) ->> 'runs_per_stream_partition')::bigint from pgflight.settings s), p_limit);
  end if;

  -- 6. stopped workers past settings.workers_keep_s, bounded. A worker that still holds a lease
  -- (deregister_worker releases them, so none should) is kept. Nothing refers to a worker by a
  -- foreign key: attempts and events keep its id as a plain number, and every read joins it
  -- with a LEFT JOIN or a probe that a missing worker fails (a fenced write: the attempt is
  -- finished or released by then).
  select s.workers_keep_s into v_workers_keep from pgflight.settings s;
  delete from pgflight.workers w
   where w.id = any (array(
           select k.id from pgflight.workers k
            where k.stopped_at < v_now - make_interval(secs => v_workers_keep)
              and k.id <> all (array(select distinct a.worker_id from pgflight.step_attempts a
                                      where a.status in ('claimed', 'running', 'cancel_requested')
                                        and a.worker_id is not null))
            limit p_limit));
  get diagnostics v_rows = row_count;
  if v_rows > 0 then
    return query select 'workers'::text, 'purged'::text, v_rows;
  end if;

  update pgflight.sweep_state set last_partitions_at = v_now;
end
$_$;

ALTER FUNCTION pgflight.maintain_partitions(p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION maintain_partitions(p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.maintain_partitions(p_limit integer) IS 'Sweep: create the events day partitions ahead (settings.partitions_ahead_days), drop those past settings.events_keep_s, purge at most p_limit stray rows of events_default; create the traces/costs partitions ahead (settings.agent_runs_per_partition agent run ids each), drop those whose agent runs are all purged, purge at most p_limit stray rows of their default partitions; delete at most p_limit workers stopped more than settings.workers_keep_s ago; one row per action.';

-- Name: mark_tool_call(bigint, bigint, bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text) RETURNS TABLE(trace_id bigint, previous_status text, content jsonb, policy text, arguments jsonb)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_use pgflight.traces;
  v_res pgflight.traces;
  v_pol pgflight.tool_policies;
  v_gate pgflight.approvals;
  v_ws bigint;
  v_args jsonb;
  v_run_args jsonb;
  v_verdict text := 'allow';
  v_block jsonb;
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
  v_args := coalesce(v_use.content -> 'input', '{}');
  v_run_args := v_args;
  select t.* into v_res from pgflight.traces t
   where t.agent_run_id = v_run.id and t.iteration = v_use.iteration and t.seq = pgflight._seq_band_tool_results() + v_use.seq;
  if v_res.id is null then
    -- a new call: the workspace's policy for this tool, else its '*' policy, when its conditions hold
    select a.workspace_id into v_ws from pgflight.step_attempts a where a.id = p_attempt_id;
    select p.* into v_pol from pgflight.tool_policies p
     where p.workspace_id = v_ws and p.tool_name in (v_use.tool_name, '*')
     order by p.tool_name = '*' limit 1;
    if found and v_pol.action <> 'allow'
       and (v_pol.condition is null or jsonb_path_exists(v_args, v_pol.condition, '{}', true))
       and (v_pol.over_usd is null or v_run.usd >= v_pol.over_usd) then
      v_verdict := v_pol.action;
    end if;
    if v_verdict = 'require_approval' then  -- its gate (a probe of the gate key's unique index)
      select g.* into v_gate from pgflight.approvals g
       where g.step_id = v_run.step_id and g.gate_key = 'tool:' || p_tool_use_id;
    end if;
    if v_verdict = 'require_approval' and v_gate.decision is null then
      insert into pgflight.approvals as g (step_id, gate_key, request, requested_at)
      values (v_run.step_id, 'tool:' || p_tool_use_id,
              jsonb_build_object('tool', v_use.tool_name, 'tool_use_id', p_tool_use_id, 'arguments', v_args),
              v_now)
      on conflict on constraint gate_key_is_unique_per_step do update
         set request = coalesce(g.request, excluded.request), requested_at = coalesce(g.requested_at, excluded.requested_at);
      return query select null::bigint, 'new'::text, null::jsonb, 'approval_required'::text, v_args;
      return;
    end if;
    if v_verdict = 'require_approval' then
      v_verdict := case when v_gate.payload ? 'message' then 'answered'
                        when v_gate.decision = 'reject' then 'rejected'
                        when v_gate.payload ? 'arguments' and v_gate.payload -> 'arguments' <> v_args then 'edited'
                        else 'approved' end;
      v_run_args := case when v_verdict = 'edited' then v_gate.payload -> 'arguments' else v_args end;
      insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content,
                                   status, attempt_id, created_at, updated_at)
      values (v_run.id, v_use.iteration, 3000 + v_use.seq, 'system', 'tool_approval', p_tool_use_id, v_use.tool_name,
              jsonb_strip_nulls(jsonb_build_object(
                'verdict', v_verdict, 'decision', v_gate.decision, 'decided_by', v_gate.actor, 'note', v_gate.note,
                'decided_at', v_gate.decided_at, 'requested_arguments', v_args,
                'arguments', case when v_verdict in ('approved', 'edited') then v_run_args end,
                'message', v_gate.payload ->> 'message')),
              'completed', p_attempt_id, v_now, v_now)
      on conflict on constraint block_is_unique do nothing;
    end if;
    if v_verdict in ('deny', 'rejected', 'answered') then
      v_block := jsonb_build_object('type', 'tool_result', 'tool_use_id', p_tool_use_id,
        'content', case v_verdict
                     when 'deny' then format('The tool call was not run: the tool policy of this workspace denies %s%s.',
                                             v_use.tool_name, case when v_pol.condition is not null then ' with these arguments' else '' end)
                     when 'answered' then v_gate.payload ->> 'message'
                     else format('The tool call was not run: the approver rejected it%s.',
                                 coalesce(': ' || nullif(v_gate.note, ''), '')) end)
        || case when v_verdict = 'answered' and v_gate.decision = 'approve' then '{}'::jsonb
                else '{"is_error": true}'::jsonb end;
      insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content,
                                   status, attempt_id, created_at, updated_at)
      values (v_run.id, v_use.iteration, pgflight._seq_band_tool_results() + v_use.seq, 'user', 'tool_result', p_tool_use_id, v_use.tool_name,
              v_block, 'completed', p_attempt_id, v_now, v_now)
      returning id into v_id;
      return query select v_id, 'completed'::text, v_block, v_verdict, null::jsonb;
      return;
    end if;
  elsif v_res.status <> 'completed' then
    -- a resumed call runs with the arguments it was approved with
    select g.* into v_gate from pgflight.approvals g
     where g.step_id = v_run.step_id and g.gate_key = 'tool:' || p_tool_use_id;
    if v_gate.decision = 'approve' and v_gate.payload ? 'arguments' then
      v_run_args := v_gate.payload -> 'arguments';
      v_verdict := case when v_run_args <> v_args then 'edited' else 'approved' end;
    end if;
  end if;
  insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content,
                               status, attempt_id, created_at, updated_at)
  values (v_run.id, v_use.iteration, pgflight._seq_band_tool_results() + v_use.seq, 'user', 'tool_result', p_tool_use_id, v_use.tool_name,
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
    return query select v_id, 'new'::text, null::jsonb, v_verdict, v_run_args;
    return;
  end if;
  select t.* into v_res from pgflight.traces t
   where t.agent_run_id = v_run.id and t.iteration = v_use.iteration and t.seq = pgflight._seq_band_tool_results() + v_use.seq;
  if v_res.status = 'interrupted' then
    update pgflight.traces t set status = 'in_flight', attempt_id = p_attempt_id, updated_at = v_now
     where t.agent_run_id = v_run.id and t.iteration = v_use.iteration and t.seq = pgflight._seq_band_tool_results() + v_use.seq;
  end if;
  return query select v_res.id, v_res.status, v_res.content, v_verdict,
                      case when v_res.status = 'completed' then null else v_run_args end;
end
$$;

ALTER FUNCTION pgflight.mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text) OWNER TO pgflight_owner;

-- Name: FUNCTION mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text) IS 'Mark a tool call in flight before it runs, after the workspace''s tool policy: returns its previous status, the policy verdict (allow | deny | approval_required | approved | edited | rejected | answered) and the arguments to run it with. Errors: ZF007, ZF003, ZF001, ZF002.';

-- Name: metrics_snapshot(bigint, integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.metrics_snapshot(p_events_after bigint DEFAULT 0, p_max_events integer DEFAULT 100000) RETURNS TABLE(metric text, labels jsonb, value double precision)
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

ALTER FUNCTION pgflight.metrics_snapshot(p_events_after bigint, p_max_events integer) OWNER TO pgflight_owner;

-- Name: FUNCTION metrics_snapshot(p_events_after bigint, p_max_events integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.metrics_snapshot(p_events_after bigint, p_max_events integer) IS 'Read: the figures of the Prometheus exporter as (metric, labels, value) rows; events are counted from the cursor p_events_after on (at most p_max_events). Errors: 22023.';

-- Name: pause_recipe(text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.pause_recipe(p_name text, p_note text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select pgflight._set_paused('recipe', p_name, true, p_note) $$;

ALTER FUNCTION pgflight.pause_recipe(p_name text, p_note text) OWNER TO pgflight_owner;

-- Name: FUNCTION pause_recipe(p_name text, p_note text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.pause_recipe(p_name text, p_note text) IS 'Pause a recipe''s claims (leased work finishes); logged with the login and note. Errors: 22023.';

-- Name: pause_workspace(text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.pause_workspace(p_name text, p_note text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select pgflight._set_paused('workspace', p_name, true, p_note) $$;

ALTER FUNCTION pgflight.pause_workspace(p_name text, p_note text) OWNER TO pgflight_owner;

-- Name: FUNCTION pause_workspace(p_name text, p_note text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.pause_workspace(p_name text, p_note text) IS 'Pause a workspace''s claims (leased work finishes); logged with the login and note. Errors: 22023, ZF003.';

-- Name: pending_approvals(integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.pending_approvals(p_limit integer DEFAULT 200) RETURNS TABLE(step_id bigint, run_id bigint, workspace text, step_key text, recipe text, gate_key text, request jsonb, default_decision text, requested_at timestamp with time zone, expires_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_lanes bigint[] := pgflight._lane_workspaces('reader');  -- null: every workspace
begin
  perform pgflight._require_limit('limit', p_limit, 1000);
  return query
  select s.id, s.run_id, w.name, s.step_key, s.recipe, g.gate_key, g.request, g.default_decision,
         g.requested_at, g.expires_at
    from pgflight.approvals g
    join pgflight.steps s on s.id = g.step_id
    join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
    join pgflight.runs r on r.id = s.run_id
    join pgflight.workspaces w on w.id = r.workspace_id
   where g.decision is null and g.requested_at is not null and a.status = 'awaiting_approval'
     and (v_lanes is null or r.workspace_id = any(v_lanes))
   order by g.requested_at, g.id
   limit p_limit;
end
$$;

ALTER FUNCTION pgflight.pending_approvals(p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION pending_approvals(p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.pending_approvals(p_limit integer) IS 'Read: undecided approval gates with their step parked on them, oldest first. Errors: 22023.';

-- Name: price_usd(text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) RETURNS numeric
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select pgflight._price_usd(p_model, p_usage) $$;

ALTER FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION price_usd(p_model text, p_usage jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) IS 'USD of a call of p_model with usage p_usage, from model_prices. Errors: 22023 unknown model.';

-- Name: purge_finished(double precision, integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.purge_finished(p_older_than_s double precision DEFAULT NULL::double precision, p_limit integer DEFAULT 1000) RETURNS integer
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

ALTER FUNCTION pgflight.purge_finished(p_older_than_s double precision, p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION purge_finished(p_older_than_s double precision, p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.purge_finished(p_older_than_s double precision, p_limit integer) IS 'Sweep: delete finished runs older than p_older_than_s seconds with all their rows; returns the count.';

-- Name: queue_depths(); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.queue_depths() RETURNS TABLE(workspace text, recipe text, ready bigint, delayed bigint, in_flight bigint, parked bigint, oldest_ready_s double precision)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  with live as (
    -- one scan per live state, each on its own partial index
    select a.run_id, a.recipe, 'queued' as k, a.available_after from pgflight.step_attempts a
     where a.status = 'queued'
    union all
    select a.run_id, a.recipe, 'leased', null from pgflight.step_attempts a
     where a.status in ('claimed', 'running', 'cancel_requested')
    union all
    select a.run_id, a.recipe, 'parked', null from pgflight.step_attempts a
     where a.status in ('awaiting_children', 'awaiting_approval')
  ), now_ as (select pgflight._now() as t)
  select w.name, l.recipe,
         count(*) filter (where l.k = 'queued' and l.available_after <= n.t),
         count(*) filter (where l.k = 'queued' and l.available_after > n.t),
         count(*) filter (where l.k = 'leased'),
         count(*) filter (where l.k = 'parked'),
         coalesce(extract(epoch from n.t - min(l.available_after) filter (
           where l.k = 'queued' and l.available_after <= n.t)), 0)::double precision
    from live l
    cross join now_ n
    join pgflight.runs r on r.id = l.run_id
    join pgflight.workspaces w on w.id = r.workspace_id
   where (select pgflight._lane_workspaces('reader')) is null
      or r.workspace_id = any (coalesce((select pgflight._lane_workspaces('reader')), '{}'))
   group by w.name, l.recipe, n.t
   order by w.name, l.recipe
$$;

ALTER FUNCTION pgflight.queue_depths() OWNER TO pgflight_owner;

-- Name: FUNCTION queue_depths(); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.queue_depths() IS 'Read: live work by workspace and recipe: ready, delayed, in_flight, parked, and the oldest ready age (s).';

-- Name: reclaim_expired(integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.reclaim_expired(p_limit integer DEFAULT 1000) RETURNS integer
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select pgflight._require_lane('operator', null, 'reclaim_expired');  -- acts on every workspace
  select pgflight._reclaim(pgflight._now(), pgflight._check_limit(p_limit))  -- 22023 for a negative limit
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

ALTER FUNCTION pgflight.record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb) IS 'Record the receipt of an external effect (first per step and key wins), even from a holder whose lease lapsed; returns (effect_id, result, recorded, lease_held). Errors: 22023, ZF001, ZF003, ZF005, ZF012.';

-- Name: record_model_call(bigint, bigint, bigint, integer, jsonb, jsonb, text, jsonb, numeric); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text, p_options jsonb DEFAULT '{}'::jsonb, p_next_est_usd numeric DEFAULT NULL::numeric) RETURNS TABLE(agent_run_id bigint, iteration integer, usd numeric, recorded boolean, iterations integer, tool_calls integer, total_usd numeric, marked text[], next_reserved boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $_$
#variable_conflict use_column
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_usd numeric;
  v_in bigint;
  v_out bigint;
  v_cw bigint;
  v_cr bigint;
  v_cw_1h bigint := 0;  -- of v_cw, the one-hour cache writes
  v_searches bigint := 0;  -- server-side web searches
  v_tokens_per_min bigint;
  v_mark boolean;
  v_run_workspace bigint;  -- with mark_tools: the workspace whose tool policies apply
  v_free integer;
  v_marked text[];
  v_reserved boolean;
  v_cap bigint;
  v_max_blocks integer;
  v_depth integer;  -- settings.max_json_depth
  v_hit boolean;  -- the fence statement found the attempt and the agent run
  v_next_ids bigint[];
  v_want boolean;  -- the next call is to be admitted here
  v_next boolean;  -- the next call was admitted here
  v_f record;  -- the fence's row: the agent run, the price, today's workspace budget, the token limit
  v_price pgflight.model_prices;
begin
  -- Arguments. Every option checked against its spec first (docs/options.md): 22023 naming the
  -- key; the agent loop's own options pass without the spec lookup (_model_call_options_ok).
  if p_options is not null and p_options <> '{}' and not pgflight._model_call_options_ok(p_options) then
    p_options := pgflight._check_options('record_model_call', p_options);
  end if;
  -- the usage: four token counts, integers from 0 to 1e10 (22023 naming the key otherwise); a usage
  -- of well-formed counts (_usage_counts_ok) is read directly, anything else goes through _opt_int,
  -- which raises.
  if pgflight._usage_counts_ok(p_usage) then
    v_in := coalesce((p_usage ->> 'input_tokens')::numeric, 0);
    v_out := coalesce((p_usage ->> 'output_tokens')::numeric, 0);
    v_cw := coalesce((p_usage ->> 'cache_creation_input_tokens')::numeric, 0);
    v_cr := coalesce((p_usage ->> 'cache_read_input_tokens')::numeric, 0);
  else
    v_in := pgflight._opt_int(p_usage, 'input_tokens', 0, 0, 10000000000, 'usage');
    v_out := pgflight._opt_int(p_usage, 'output_tokens', 0, 0, 10000000000, 'usage');
    v_cw := pgflight._opt_int(p_usage, 'cache_creation_input_tokens', 0, 0, 10000000000, 'usage');
    v_cr := pgflight._opt_int(p_usage, 'cache_read_input_tokens', 0, 0, 10000000000, 'usage');
  end if;
  -- one-hour cache writes and web searches, priced apart (_price_of); read only when present
  if p_usage ? 'cache_creation' or p_usage ? 'server_tool_use' then
    select x.cw_1h, x.searches into v_cw_1h, v_searches from pgflight._usage_extras(p_usage) x;
  end if;
  if p_blocks is null or jsonb_typeof(p_blocks) <> 'array' then
    raise exception using errcode = '22023', message = 'blocks must be a JSON array',
      hint = 'Pass the response''s content array as returned by the Messages API.';
  end if;
  if p_iteration is null or p_iteration < 1 then
    raise exception using errcode = '22023', message = 'iteration must be >= 1';
  end if;
  -- bounded like reserve_budget's est_usd; _check_arg raises
  if p_next_est_usd is not null and not (p_next_est_usd >= 0 and p_next_est_usd <= 1000000) then
    perform pgflight._check_arg('next_est_usd', p_next_est_usd, 0, 1000000);
  end if;
  if p_options ? 'mark_tools' and jsonb_typeof(p_options -> 'mark_tools') not in ('boolean', 'null') then
    raise exception using errcode = '22023', message = 'option mark_tools must be a boolean';
  end if;
  v_mark := coalesce((p_options ->> 'mark_tools')::boolean, false);
  -- the fence of _agent_fence (attempt FOR SHARE, agent run FOR UPDATE, the holder's login) and, in
  -- the same statement, what the call needs of other tables: the price (longest model prefix), the
  -- workspace's daily cap with today's (UTC) budget row, its model tokens per minute, the
  -- settings row (its caps: result bytes, blocks per iteration, JSON depth) and the attempt's
  -- workspace (whose tool policies apply). Subqueries, not joins: each is planned on its own, so
  -- a replan (after an ANALYZE) searches no join order.
  select r as run, a.workspace_id as attempt_workspace,
         (select s from pgflight.settings s) as settings,
         (select p from pgflight.model_prices p
           where left(p_model, length(p.model)) = p.model order by length(p.model) desc limit 1) as price,
         (select w.daily_usd_cap from pgflight.workspaces w where w.id = r.workspace_id) as daily_usd_cap,
         (select d from pgflight.budgets d
           where d.scope = 'workspace_day' and d.workspace_id = r.workspace_id
             and d.day = (v_now at time zone 'UTC')::date) as day,
         (select l.model_tokens_per_min from pgflight.workspace_limits l
           where l.workspace_id = r.workspace_id) as model_tokens_per_min
    into v_f
    from pgflight.step_attempts a
    join pgflight.agent_runs r on r.step_id = a.step_id
   -- the status test written IS TRUE, so no plan reads the attempt through the partial index of
   -- leased attempts (all of them) instead of its primary key (a choice seen on small tables)
   where a.id = p_attempt_id and a.fencing_token = p_token and (a.status in ('claimed', 'running')) is true
     and r.id = p_agent_run_id
     and exists (select from pgflight.workers k where k.id = a.worker_id and k.login = session_user)
     for share of a for update of r;
  v_hit := found;
  -- The response's blocks are capped like a result (ZF005, nothing written); on a fence
  -- miss checked before _agent_fence reports it, as when the cap was read before the fence
  if v_hit then
    v_cap := (v_f.settings).max_result_bytes;
    v_max_blocks := (v_f.settings).max_trace_blocks_per_iteration;
    v_depth := (v_f.settings).max_json_depth;
  else
    select s.max_result_bytes, s.max_trace_blocks_per_iteration, s.max_json_depth into v_cap, v_max_blocks, v_depth
      from pgflight.settings s;
  end if;
  -- a response of more blocks than an iteration may hold (settings.max_trace_blocks_per_iteration)
  if jsonb_array_length(p_blocks) > v_max_blocks then
    perform pgflight._require_cap('max_trace_blocks_per_iteration', v_max_blocks, jsonb_array_length(p_blocks),
                                  'model response blocks (count)');
  end if;
  if octet_length(p_blocks::text) > v_cap then  -- _require_cap raises (called only then)
    perform pgflight._require_cap('max_result_bytes', v_cap, octet_length(p_blocks::text),
                                  'model response blocks (bytes)');
  end if;
  -- the depth cap (ZF005): _require_json_depth's own first test here, so a value too small to nest
  -- deeper than the cap costs no call (each, with its SET clause and its read of the settings,
  -- cost more than the test); a larger one goes to the helper, a null one to neither
  if not (pg_column_size(p_blocks) < 8 * (v_depth + 1) and pg_column_compression(p_blocks) is null) then
    perform pgflight._require_json_depth(p_blocks, 'model response blocks');
  end if;
  if not (pg_column_size(p_usage) < 8 * (v_depth + 1) and pg_column_compression(p_usage) is null) then
    perform pgflight._require_json_depth(p_usage, 'usage');
  end if;
  if not v_hit then  -- _agent_fence raises ZF001 / ZF002 / ZF003 / ZF012
    v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'record_model_call');
    -- (found on a second look: the price and the day's budget go through their helpers)
    select r as run, null::pgflight.model_prices as price, w.daily_usd_cap, null::pgflight.budgets as day,
           l.model_tokens_per_min
      into v_f
      from pgflight.agent_runs r
      join pgflight.workspaces w on w.id = r.workspace_id
      left join pgflight.workspace_limits l on l.workspace_id = r.workspace_id
     where r.id = v_run.id;
  end if;
  v_run := v_f.run;
  v_price := v_f.price;
  if v_price.model is null then  -- _price_usd raises 22023 when no price matches
    v_usd := pgflight._price_usd(p_model, coalesce(p_usage, '{}'));
  else  -- _price_usd's sum, of the counts read above (the same values)
    v_usd := pgflight._price_of(v_price, v_in, v_out, v_cw, v_cr, v_cw_1h, v_searches);
  end if;

  -- the costs row is the iteration's claim: a repeat stores nothing
  insert into pgflight.costs (agent_run_id, iteration, step_id, run_id, workspace_id, model, input_tokens,
                              output_tokens, cache_creation_tokens, cache_read_tokens, usd, stop_reason,
                              retries, attempt_id, at, cache_creation_1h_tokens, web_search_requests)
  values (v_run.id, p_iteration, v_run.step_id, v_run.run_id, v_run.workspace_id, p_model, v_in, v_out, v_cw, v_cr,
          v_usd, p_options ->> 'stop_reason',  -- both checked above
          coalesce((p_options ->> 'retries')::numeric, 0)::integer, p_attempt_id, v_now, v_cw_1h, v_searches)
  -- No conflict target: with one, every insert into the partitioned table maps the
  -- arbiter to the partition's index by reading pg_inherits for each of its five indexes. Without
  -- it every unique index arbitrates, and only one_call_per_iteration can conflict here: the
  -- primary key (id, agent_run_id) takes a fresh id, one_orphan_per_attempt holds lease_lost rows
  -- only (tables/costs_lease_lost).
  on conflict do nothing;
  if not found then
    return query select v_run.id, p_iteration, c.usd, false, v_run.iterations, v_run.tool_calls, v_run.usd,
                        '{}'::text[], false
      from pgflight.costs c where c.agent_run_id = v_run.id and c.iteration = p_iteration and not c.lease_lost;
    return;
  end if;

  v_reserved := v_run.reserved_attempt_id = p_attempt_id and v_run.reserved_iteration = p_iteration;
  v_tokens_per_min := v_f.model_tokens_per_min;
  -- the next call is admitted early only when no tokens-per-minute limit applies and it is within
  -- max_iterations (otherwise complete_tool_calls admits it, or refuses it, as before)
  v_want := p_next_est_usd is not null and v_tokens_per_min is null and p_iteration < v_run.max_iterations;
  if v_want then
    -- _call_budget_ids' common case inline: the tree's budgets and today's workspace row, when it
    -- exists at the current cap (else the helper creates it or gives it the cap)
    if v_f.daily_usd_cap is null then
      v_next_ids := v_run.budget_ids;
    elsif (v_f.day).id is not null and (v_f.day).limit_usd = v_f.daily_usd_cap then
      v_next_ids := v_run.budget_ids || (v_f.day).id;
    else
      v_next_ids := pgflight._call_budget_ids(v_run, v_now);
    end if;
  end if;
  -- the budgets: this call settled (ZF007 when unreserved and a cap refuses it), the next admitted
  v_next := pgflight._settle_model_call(v_run, p_iteration, v_usd, v_reserved, v_want, p_next_est_usd, v_next_ids, v_now);

  -- the workspace's model tokens per minute: the call's tokens replace its admitted estimate
  if v_tokens_per_min is not null then
    perform pgflight._settle_tokens(v_run, v_tokens_per_min, v_in + v_out, v_reserved, v_now);
  end if;

  -- the response blocks and, with mark_tools, the in-flight rows of as many tool calls as the cap
  -- allows; then the agent's totals, with as many more tool calls as were marked. One statement
  -- (the totals' update was a statement of its own; each costs an executor start-up).
  v_free := case when v_mark then greatest(v_run.max_tool_calls - v_run.tool_calls, 0) else 0 end;
  if v_free > 0 then
    if v_hit then
      v_run_workspace := v_f.attempt_workspace;
    else
      select a.workspace_id into v_run_workspace from pgflight.step_attempts a where a.id = p_attempt_id;
    end if;
  end if;
  with b as (
    -- the block's own type, so a type this code does not know (server_tool_use,
    -- web_search_tool_result, one added later) is stored and sent back as it came; a name the
    -- traces cannot hold (absent, not lower-case letters, digits and underscores, longer than 64)
    -- or one that belongs to the client's
    -- side of the conversation is labelled 'unknown' (the content is kept whole either way)
    select (e.ord - 1)::integer as seq, e.v,
           case when e.v ->> 'type' = 'redacted_thinking' then 'thinking'
                when e.v ->> 'type' = any ('{tool_result,api_error}'::text[])
                     or (e.v ->> 'type' ~ '^[a-z][a-z0-9_]{0,63}$') is not true then 'unknown'
                else e.v ->> 'type' end as block_type
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
    select v_run.id, p_iteration, pgflight._seq_band_tool_results() + u.seq, 'user', 'tool_result', u.v ->> 'id', u.v ->> 'name', null,
           'in_flight', null, p_attempt_id, v_now, v_now
      from (select b.seq, b.v, row_number() over (order by b.seq) as n from b where b.block_type = 'tool_use') u
     where u.n <= v_free
       -- a call a tool policy of the workspace may hold back (deny, require_approval) is left
       -- for mark_tool_call, which applies the policy before it marks the call
       and not exists (select from pgflight.tool_policies p
                         where p.workspace_id = v_run_workspace and p.tool_name in (u.v ->> 'name', '*')
                           and p.action <> 'allow')
    on conflict on constraint block_is_unique do nothing
    returning seq, tool_use_id, status
  ), m as (  -- the tool_use ids now in flight, in block order
    select coalesce(array_agg(ins.tool_use_id order by ins.seq) filter (where ins.status = 'in_flight'), '{}') as marked
      from ins
  ), up as (
    update pgflight.agent_runs r
       set iterations = greatest(r.iterations, p_iteration),
           tool_calls = r.tool_calls + (select cardinality(m.marked) from m),
           input_tokens = r.input_tokens + v_in,
           output_tokens = r.output_tokens + v_out,
           cache_creation_tokens = r.cache_creation_tokens + v_cw,
           cache_read_tokens = r.cache_read_tokens + v_cr,
           usd = r.usd + v_usd,
           -- the next call's reservation, or none; the attempt id stays when it does not change (HOT)
           reserved_usd = case when v_next then p_next_est_usd else 0 end,
           reserved_attempt_id = case when v_next then p_attempt_id else r.reserved_attempt_id end,
           reserved_iteration = case when v_next then p_iteration + 1 end,
           reserved_budget_ids = case when v_next then v_next_ids end,
           reserved_call_out = false,  -- this call is recorded; the next one's reservation is ahead of it
           updated_at = v_now
     where r.id = v_run.id
    returning r.iterations, r.tool_calls, r.usd
  )
  select m.marked, up.iterations, up.tool_calls, up.usd into v_marked, iterations, tool_calls, total_usd
    from m, up;
  agent_run_id := v_run.id;
  iteration := p_iteration;
  usd := v_usd;
  recorded := true;
  marked := v_marked;
  next_reserved := v_next;
  return next;
end
$_$;

ALTER FUNCTION pgflight.record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text, p_options jsonb, p_next_est_usd numeric) OWNER TO pgflight_owner;

-- Name: FUNCTION record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text, p_options jsonb, p_next_est_usd numeric); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text, p_options jsonb, p_next_est_usd numeric) IS 'Store a model response (traces), its usage and USD cost (costs), settle budgets and totals, and with mark_tools mark its tool calls in flight, in one transaction; returns (agent_run_id, iteration, usd, recorded, totals, marked, next_reserved); with p_next_est_usd it also admits the next call (reserving that many USD). Options (docs/options.md): stop_reason, retries, mark_tools. Errors: ZF007, ZF001, ZF002, ZF003, 22023.';

-- Name: record_orphan_cost(bigint, bigint, bigint, integer, jsonb, text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.record_orphan_cost(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_usage jsonb, p_model text, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(agent_run_id bigint, iteration integer, usd numeric, recorded boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
  v_now timestamptz := pgflight._now();
  v_opts jsonb := pgflight._check_options('record_orphan_cost', p_options);
  v_att record;
  v_run pgflight.agent_runs;
  v_usd numeric;
  v_in bigint := pgflight._opt_int(p_usage, 'input_tokens', 0, 0, 10000000000, 'usage');
  v_out bigint := pgflight._opt_int(p_usage, 'output_tokens', 0, 0, 10000000000, 'usage');
  v_cw bigint := pgflight._opt_int(p_usage, 'cache_creation_input_tokens', 0, 0, 10000000000, 'usage');
  v_cr bigint := pgflight._opt_int(p_usage, 'cache_read_input_tokens', 0, 0, 10000000000, 'usage');
  v_x record := pgflight._usage_extras(p_usage);  -- one-hour cache writes, web searches
  v_tokens_per_min bigint;
  v_est pgflight.costs;  -- the unknown-outcome row this answer settles
begin
  if p_iteration is null or p_iteration < 1 then
    raise exception using errcode = '22023', message = 'iteration must be >= 1', detail = format('got %s', p_iteration);
  end if;
  if p_model is null or length(p_model) not between 1 and 256 then
    raise exception using errcode = '22023', message = 'model is required (at most 256 characters)';
  end if;
  if p_attempt_id is null or p_token is null then
    perform pgflight._null_refused('record_orphan_cost', case when p_attempt_id is null then 'the attempt id'
                                                              else 'the fencing token' end);
  end if;
  -- the fence: this token was issued to the attempt (whatever its status now) by a claim of a
  -- worker of this login; otherwise _reject_write raises (ZF003 unknown or outside the lanes,
  -- ZF012 another login's worker, ZF001)
  select a.step_id into v_att from pgflight.step_attempts a
   where a.id = p_attempt_id and a.fencing_token = p_token
     and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user);
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, 'record_orphan_cost');
  end if;
  select r.* into v_run from pgflight.agent_runs r
   where r.id = p_agent_run_id and r.step_id = v_att.step_id
     for update;
  if not found then
    raise exception using errcode = 'ZF003',
      message = format('unknown agent run %s for attempt %s', p_agent_run_id, p_attempt_id);
  end if;
  v_usd := pgflight._price_usd(p_model, coalesce(p_usage, '{}'));

  insert into pgflight.costs (agent_run_id, iteration, step_id, run_id, workspace_id, model, input_tokens,
                              output_tokens, cache_creation_tokens, cache_read_tokens, usd, stop_reason,
                              retries, attempt_id, at, lease_lost, cache_creation_1h_tokens, web_search_requests)
  values (v_run.id, p_iteration, v_run.step_id, v_run.run_id, v_run.workspace_id, p_model, v_in, v_out, v_cw, v_cr,
          v_usd, v_opts ->> 'stop_reason', coalesce((v_opts ->> 'retries')::integer, 0), p_attempt_id, v_now, true,
          v_x.cw_1h, v_x.searches)
  on conflict (agent_run_id, iteration, attempt_id) where lease_lost do nothing;
  if not found then
    -- the late answer of a call charged at its reservation when its attempt ended with it out
    -- (_release_reservation): the row becomes the real figures, and the budgets it was charged to
    -- and the agent's totals move by the difference (less when the answer cost less)
    select o.* into v_est from pgflight.costs o
     where o.agent_run_id = v_run.id and o.iteration = p_iteration and o.attempt_id = p_attempt_id
       and o.lease_lost and o.unknown_outcome
       for update;
    if found then
      update pgflight.costs c
         set model = p_model, input_tokens = v_in, output_tokens = v_out, cache_creation_tokens = v_cw,
             cache_read_tokens = v_cr, cache_creation_1h_tokens = v_x.cw_1h, web_search_requests = v_x.searches,
             usd = v_usd, stop_reason = v_opts ->> 'stop_reason',
             retries = coalesce((v_opts ->> 'retries')::integer, 0), unknown_outcome = false
       where c.agent_run_id = v_run.id and c.id = v_est.id;
      perform pgflight._move_budget(v_est.budget_ids, 0, v_usd - v_est.usd, 0, false, v_now,
                                    format('agent_run=%s iteration=%s settled: the answer of a call charged at '
                                           'its reservation', v_run.id, p_iteration));
      update pgflight.agent_runs r
         set usd = greatest(r.usd + v_usd - v_est.usd, 0), input_tokens = r.input_tokens + v_in,
             output_tokens = r.output_tokens + v_out, cache_creation_tokens = r.cache_creation_tokens + v_cw,
             cache_read_tokens = r.cache_read_tokens + v_cr, updated_at = v_now
       where r.id = v_run.id;
      return query select v_run.id, p_iteration, v_usd, true;
      return;
    end if;
    return query select v_run.id, p_iteration, c.usd, false from pgflight.costs c
      where c.agent_run_id = v_run.id and c.iteration = p_iteration and c.attempt_id = p_attempt_id and c.lease_lost;
    return;
  end if;

  -- the workspace's model tokens per minute: the tokens were used (replacing an admitted estimate)
  select l.model_tokens_per_min into v_tokens_per_min
    from pgflight.workspace_limits l where l.workspace_id = v_run.workspace_id;
  if v_tokens_per_min is not null then
    perform pgflight._settle_tokens(v_run, v_tokens_per_min, v_in + v_out,
                                    v_run.reserved_attempt_id = p_attempt_id and v_run.reserved_iteration = p_iteration,
                                    v_now);
  end if;
  if v_run.reserved_attempt_id = p_attempt_id and v_run.reserved_iteration = p_iteration then
    perform pgflight._move_budget(v_run.reserved_budget_ids, 0, v_usd, v_run.reserved_usd, false, v_now,
                                  'settle (lease lost)');
    update pgflight.agent_runs r
       set reserved_usd = 0, reserved_attempt_id = null, reserved_iteration = null, reserved_budget_ids = null,
           reserved_call_out = false
     where r.id = v_run.id;
  else
    perform pgflight._move_budget(pgflight._call_budget_ids(v_run, v_now), 0, v_usd, 0, false, v_now,
                                  format('agent_run=%s iteration=%s lease lost: %s', v_run.id, p_iteration,
                                         coalesce(v_opts ->> 'why', 'paid call of a lost lease')));
  end if;
  update pgflight.agent_runs r
     set usd = r.usd + v_usd, input_tokens = r.input_tokens + v_in, output_tokens = r.output_tokens + v_out,
         cache_creation_tokens = r.cache_creation_tokens + v_cw, cache_read_tokens = r.cache_read_tokens + v_cr,
         updated_at = v_now
   where r.id = v_run.id;
  return query select v_run.id, p_iteration, v_usd, true;
end
$$;

ALTER FUNCTION pgflight.record_orphan_cost(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_usage jsonb, p_model text, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION record_orphan_cost(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_usage jsonb, p_model text, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.record_orphan_cost(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_usage jsonb, p_model text, p_options jsonb) IS 'Record the cost of a paid model call whose attempt lost its lease (costs.lease_lost) and charge it to the budgets, uncapped; idempotent per (agent run, iteration, attempt). Options (docs/options.md): stop_reason, retries, why. Errors: 22023, ZF001, ZF003, ZF012.';

-- Name: record_stale_write(bigint, bigint, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.record_stale_write(p_attempt_id bigint, p_token bigint, p_operation text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_att record;
  v_settings pgflight.settings;
begin
  if p_attempt_id is null or p_token is null then
    perform pgflight._null_refused('record_stale_write', case when p_attempt_id is null then 'the attempt id'
                                                              else 'the fencing token' end);
  end if;
  select * into v_settings from pgflight.settings;
  perform pgflight._require_cap('max_name_bytes', v_settings.max_name_bytes, octet_length(p_operation),
                                'operation (bytes)');
  select a.id, a.run_id, w.login,
         w.login is not distinct from session_user or pgflight._may('worker', a.workspace_id) as visible
    into v_att
    from pgflight.step_attempts a left join pgflight.workers w on w.id = a.worker_id where a.id = p_attempt_id;
  if not found or not v_att.visible then
    return false;  -- an unknown attempt, or one outside the login's worker lanes: nothing to record
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

COMMENT ON FUNCTION pgflight.record_stale_write(p_attempt_id bigint, p_token bigint, p_operation text) IS 'Log a refused (stale) worker write of this login as a stale_result_rejected event; true when logged. Errors: 22023 a NULL attempt id or token, ZF005 over max_stale_writes_per_attempt, ZF012 another login''s attempt.';

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

ALTER FUNCTION pgflight.record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_role text, p_block_type text, p_content jsonb, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_role text, p_block_type text, p_content jsonb, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_role text, p_block_type text, p_content jsonb, p_options jsonb) IS 'Store one trace block (e.g. a transient API error); idempotent by seq. Options (docs/options.md): seq, tool_use_id, tool_name, status, tokens. At most settings.max_trace_blocks_per_iteration blocks an iteration. Errors: ZF001, ZF002, ZF003, ZF005, 22023.';

-- Name: register_worker(text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.register_worker(p_name text, p_options jsonb DEFAULT '{}'::jsonb) RETURNS bigint
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

ALTER FUNCTION pgflight.register_worker(p_name text, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION register_worker(p_name text, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.register_worker(p_name text, p_options jsonb) IS 'Register a worker process of this login; returns its id. options: hostname, pid, recipes. Errors: 22023, ZF005 name, options or live workers over their cap.';

-- Name: release_step(bigint, bigint, text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.release_step(p_attempt_id bigint, p_token bigint, p_reason text DEFAULT 'released'::text, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(attempt_id bigint, status text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_row pgflight.step_attempts;
  v_now timestamptz := pgflight._now();
  v_cascade boolean;
  v_opts jsonb := pgflight._check_options('release_step', p_options);
  v_after double precision := coalesce((v_opts ->> 'retry_after_s')::double precision, 0);
begin
  loop
    v_cascade := exists (select from pgflight.step_attempts a
                          where a.id = p_attempt_id and a.fencing_token = p_token and a.status = 'cancel_requested');
    if v_cascade then
      perform pgflight._lock_cascade(p_attempt_id, false);
    end if;
    begin
      v_row := pgflight._lock_held(p_attempt_id, p_token, 'release_step', true);
      if v_row.status = 'cancel_requested' and not v_cascade then
        raise exception using errcode = 'ZF099', message = 'internal: take the cascade''s locks first';
      end if;
      exit;
    exception when sqlstate 'ZF099' then
      null;  -- the attempt's lock given back with the block; round again, the cascade first
    end;
  end loop;
  if v_row.status = 'cancel_requested' then
    update pgflight.step_attempts set status = 'cancelled', finished_at = v_now where id = p_attempt_id;
    perform pgflight._event(v_row.run_id, v_row.step_id, p_attempt_id, 'cancel_requested', 'cancelled',
                            v_row.worker_id, 'cancelled', null, jsonb_build_object('note', p_reason));
    perform pgflight._step_finished(v_row.step_id, 'cancelled');
    return query select p_attempt_id, 'cancelled'::text;
    return;
  end if;
  update pgflight.step_attempts set status = 'queued', available_after = v_now + make_interval(secs => v_after)
   where id = p_attempt_id;
  perform pgflight._event(v_row.run_id, v_row.step_id, p_attempt_id, v_row.status, 'queued',
                          v_row.worker_id, 'released', null,
                          case when p_reason is null then null else jsonb_build_object('note', p_reason) end);
  if v_after = 0 then
    perform pgflight._notify_ready();  -- a later claim is found by the workers' poll
  end if;
  return query select p_attempt_id, 'released'::text;
end
$$;

ALTER FUNCTION pgflight.release_step(p_attempt_id bigint, p_token bigint, p_reason text, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION release_step(p_attempt_id bigint, p_token bigint, p_reason text, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.release_step(p_attempt_id bigint, p_token bigint, p_reason text, p_options jsonb) IS 'Return a held attempt to queued (no attempt spent), or acknowledge a cancel; outcome released | cancelled. Options (docs/options.md): retry_after_s (seconds, 0 to 2592000: claimable only then). Errors: ZF001, ZF003, 22023.';

-- Name: replay_from(bigint, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.replay_from(p_step_id bigint, p_actor text DEFAULT NULL::text, p_note text DEFAULT NULL::text) RETURNS bigint
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

ALTER FUNCTION pgflight.replay_from(p_step_id bigint, p_actor text, p_note text) OWNER TO pgflight_owner;

-- Name: FUNCTION replay_from(p_step_id bigint, p_actor text, p_note text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.replay_from(p_step_id bigint, p_actor text, p_note text) IS 'Run a terminal step again and then its ancestors; returns the attempt id. Errors: ZF003, ZF006.';

-- Name: request_approval(bigint, bigint, text, jsonb, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb DEFAULT NULL::jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(decision text, actor text, note text, payload jsonb, waiting boolean)
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

ALTER FUNCTION pgflight.request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb, p_options jsonb) IS 'Ask for a decision at a gate: returns it at once if known, else parks the attempt in awaiting_approval (waiting = true); once decided: decision, actor, note and the decider''s payload. Options (docs/options.md): expires_in_s, default_decision. Errors: ZF001, ZF002, ZF003, 22023.';

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

ALTER FUNCTION pgflight.reserve_budget(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_est_usd numeric) OWNER TO pgflight_owner;

-- Name: FUNCTION reserve_budget(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_est_usd numeric); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.reserve_budget(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_est_usd numeric) IS 'Admission before a model call: check caps and reserve est USD atomically. Errors: ZF007, ZF001, ZF002, ZF003, 22023.';

-- Name: resume_recipe(text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.resume_recipe(p_name text, p_note text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select pgflight._set_paused('recipe', p_name, false, p_note) $$;

ALTER FUNCTION pgflight.resume_recipe(p_name text, p_note text) OWNER TO pgflight_owner;

-- Name: FUNCTION resume_recipe(p_name text, p_note text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.resume_recipe(p_name text, p_note text) IS 'Resume a recipe''s claims (leased work finishes); logged with the login and note. Errors: 22023.';

-- Name: resume_workspace(text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.resume_workspace(p_name text, p_note text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select pgflight._set_paused('workspace', p_name, false, p_note) $$;

ALTER FUNCTION pgflight.resume_workspace(p_name text, p_note text) OWNER TO pgflight_owner;

-- Name: FUNCTION resume_workspace(p_name text, p_note text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.resume_workspace(p_name text, p_note text) IS 'Resume a workspace''s claims (leased work finishes); logged with the login and note. Errors: 22023, ZF003.';

-- Name: retry_step(bigint, text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.retry_step(p_step_id bigint, p_actor text DEFAULT NULL::text, p_note text DEFAULT NULL::text) RETURNS bigint
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
  -- the lane on the run's workspace is a predicate of the one statement: a run outside it finds no
  -- row and answers exactly as an unknown run (one answer for what a login may not see)
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
   where r.id = p_run_id and pgflight._may('reader', r.workspace_id);
  if not found then
    raise exception using errcode = 'ZF003', message = format('unknown run %s', p_run_id),
      hint = 'List runs with pgflight runs.';
  end if;
end
$$;

ALTER FUNCTION pgflight.run_audit(p_run_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION run_audit(p_run_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.run_audit(p_run_id bigint) IS 'Audit of a run from the tables: steps, attempts, retries, reclaimed attempts, stale writes rejected, dead letters, model calls, tokens, USD, wall time (s), and the succeeded / unfinished / succeeded-twice step counts. Errors: ZF003 unknown run.';

-- Name: run_list_page(bigint, integer, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.run_list_page(p_after bigint DEFAULT NULL::bigint, p_limit integer DEFAULT 50, p_filters jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(run_id bigint, workspace text, recipe text, status text, state text, idempotency_key text, submitted_by text, created_at timestamp with time zone, finished_at timestamp with time zone, duration_s double precision, usd numeric, root_step_id bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_filters jsonb := coalesce(p_filters, '{}');
  v_key text;
  v_status text;
  v_recipe text;
  v_ws bigint;
  v_since timestamptz;
  v_until timestamptz;
  v_live bigint[];
  v_bad text;
  v_lanes bigint[] := pgflight._lane_workspaces('reader');  -- null: every workspace
begin
  perform pgflight._require_limit('limit', p_limit, 500);
  if jsonb_typeof(v_filters) <> 'object' then
    raise exception using errcode = '22023', message = 'filters must be a JSON object',
      detail = format('got a JSON %s', jsonb_typeof(v_filters));
  end if;
  select k into v_bad from jsonb_object_keys(v_filters) k
   where k not in ('key', 'status', 'recipe', 'workspace', 'since', 'until') limit 1;
  if v_bad is not null then
    raise exception using errcode = '22023', message = format('unknown filter %L', v_bad),
      hint = 'Filters: key, status, recipe, workspace, since, until.';
  end if;
  v_key := nullif(v_filters ->> 'key', '');
  v_status := nullif(v_filters ->> 'status', '');
  v_recipe := nullif(v_filters ->> 'recipe', '');
  if v_status is not null and v_status not in ('queued', 'running', 'waiting', 'succeeded', 'failed', 'cancelled') then
    raise exception using errcode = '22023', message = format('unknown status %L', v_status),
      hint = 'Status: queued, running, waiting, succeeded, failed or cancelled.';
  end if;
  begin
    v_since := nullif(v_filters ->> 'since', '')::timestamptz;
    v_until := nullif(v_filters ->> 'until', '')::timestamptz;
  exception when others then
    raise exception using errcode = '22023', message = 'since and until must be timestamps',
      detail = sqlerrm, hint = 'Use ISO 8601, e.g. 2026-11-30T12:00:00Z.';
  end;
  if nullif(v_filters ->> 'workspace', '') is not null then
    select w.id into v_ws from pgflight.workspaces w where w.name = v_filters ->> 'workspace';
    if v_ws is null then
      return;
    end if;
  end if;

  -- live states: the runs whose root step's latest attempt is in that state, from the partial indexes
  if v_status = 'queued' then
    v_live := array(select a.run_id from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id
                     where a.status = 'queued' and s.parent_id is null);
  elsif v_status = 'running' then
    v_live := array(select a.run_id from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id
                     where a.status in ('claimed', 'running', 'cancel_requested') and s.parent_id is null);
  elsif v_status = 'waiting' then
    v_live := array(select a.run_id from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id
                     where a.status in ('awaiting_children', 'awaiting_approval') and s.parent_id is null);
  end if;

  return query
  select r.id, w.name, r.recipe, r.status,
         case when r.status <> 'running' then r.status
              when root.status = 'queued' then 'queued'
              when root.status in ('awaiting_children', 'awaiting_approval') then 'waiting'
              else 'running' end,
         r.idempotency_key, r.submitted_by, r.created_at, r.finished_at,
         extract(epoch from coalesce(r.finished_at, pgflight._now()) - r.created_at)::double precision,
         (select sum(c.usd) from pgflight.costs c where c.run_id = r.id),
         r.root_step_id
    from pgflight.runs r
    join pgflight.workspaces w on w.id = r.workspace_id
    left join lateral (
      -- the root step's latest attempt: its status tells queued from running from waiting
      select a.status from pgflight.steps s
        join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
       where s.id = r.root_step_id) root on true
   where (p_after is null or r.id < p_after)
     and (v_live is null or r.id = any(v_live))
     and (v_status is null or v_live is not null or r.status = v_status)
     and (v_ws is null or r.workspace_id = v_ws)
     and (v_lanes is null or r.workspace_id = any(v_lanes))
     and (v_recipe is null or r.recipe = v_recipe)
     and (v_key is null or starts_with(r.idempotency_key, v_key))
     and (v_since is null or r.created_at >= v_since)
     and (v_until is null or r.created_at < v_until)
   order by r.id desc
   limit p_limit;
end
$$;

ALTER FUNCTION pgflight.run_list_page(p_after bigint, p_limit integer, p_filters jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION run_list_page(p_after bigint, p_limit integer, p_filters jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.run_list_page(p_after bigint, p_limit integer, p_filters jsonb) IS 'Read: a page of runs newest first (keyset by run id), with state, duration (s) and cost (USD); filters key, status, recipe, workspace, since, until. Errors: 22023.';

-- Name: run_status(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.run_status(p_run_id bigint) RETURNS TABLE(run_id bigint, workspace text, recipe text, status text, created_at timestamp with time zone, finished_at timestamp with time zone, steps_total bigint, steps_queued bigint, steps_running bigint, steps_waiting bigint, steps_succeeded bigint, steps_dead_letter bigint, steps_cancelled bigint, attempts_total bigint, result jsonb, error jsonb)
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

ALTER FUNCTION pgflight.run_status(p_run_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION run_status(p_run_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.run_status(p_run_id bigint) IS 'A run''s status, step counts by status, attempts, and the root result. Errors: ZF003 unknown run.';

-- Name: run_sweeps(); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.run_sweeps() RETURNS TABLE(sweep text, affected integer)
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

ALTER FUNCTION pgflight.run_sweeps() OWNER TO pgflight_owner;

-- Name: FUNCTION run_sweeps(); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.run_sweeps() IS 'Run every sweep once (the reclaim batch grown while a backlog lasts, partitions kept once a minute); returns rows affected per sweep.';

-- Name: run_trace_context(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.run_trace_context(p_run_id bigint) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select r.options ->> 'traceparent' from pgflight.runs r
   where r.id = p_run_id
     and ((select pgflight._lane_workspaces('reader')) is null
          or r.workspace_id = any (coalesce((select pgflight._lane_workspaces('reader')), '{}')))
$$;

ALTER FUNCTION pgflight.run_trace_context(p_run_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION run_trace_context(p_run_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.run_trace_context(p_run_id bigint) IS 'Read: the traceparent a run was submitted under (options.traceparent), or null.';

-- Name: run_waits(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.run_waits(p_run_id bigint) RETURNS TABLE(step_id bigint, attempt_id bigint, step_key text, recipe text, kind text, gate_key text, request jsonb, default_decision text, requested_at timestamp with time zone, expires_at timestamp with time zone, event_name text, event_key text, due_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_lanes bigint[] := pgflight._lane_workspaces('reader');  -- null: every workspace
begin
  if p_run_id is null then
    raise exception using errcode = '22023', message = 'run_waits refused: the run id is required',
      detail = 'p_run_id is null', hint = 'Pass the id submit_run returned.';
  end if;
  return query
  with parked as (
    -- the run's steps parked now: their latest attempt awaits a gate, a timer or an event
    select s.id as step_id, a.id as attempt_id, s.step_key, s.recipe
      from pgflight.runs r
      join pgflight.steps s on s.run_id = r.id
      join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
     where r.id = p_run_id and a.status = 'awaiting_approval'
       and (v_lanes is null or r.workspace_id = any(v_lanes))
  )
  select p.step_id, p.attempt_id, p.step_key, p.recipe, 'approval'::text, g.gate_key, g.request,
         g.default_decision, g.requested_at, g.expires_at, null::text, null::text, null::timestamptz
    from parked p
    join pgflight.approvals g on g.step_id = p.step_id
   where g.decision is null and g.requested_at is not null
  union all
  select p.step_id, p.attempt_id, p.step_key, p.recipe, w.kind, null::text, null::jsonb, null::text,
         w.requested_at, null::timestamptz, w.event_name, w.event_key, w.due_at
    from parked p
    join pgflight.waits w on w.step_id = p.step_id and w.parked_attempt_id = p.attempt_id
   where w.outcome is null
   order by 1, 5, 6;
end
$$;

ALTER FUNCTION pgflight.run_waits(p_run_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION run_waits(p_run_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.run_waits(p_run_id bigint) IS 'Read: the pending waits of a run''s parked steps (step_id, attempt_id, step_key, recipe, kind approval | event | timer, gate_key, request, default_decision, requested_at, expires_at, event_name, event_key, due_at), by step id; a run outside the login''s lanes has none. Errors: 22023.';

-- Name: schedule_run(text, text, text, text, jsonb, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.schedule_run(p_workspace text, p_name text, p_cron text, p_recipe text, p_input jsonb DEFAULT '{}'::jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(schedule_id bigint, next_fire_at timestamp with time zone)
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

ALTER FUNCTION pgflight.schedule_run(p_workspace text, p_name text, p_cron text, p_recipe text, p_input jsonb, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION schedule_run(p_workspace text, p_name text, p_cron text, p_recipe text, p_input jsonb, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.schedule_run(p_workspace text, p_name text, p_cron text, p_recipe text, p_input jsonb, p_options jsonb) IS 'Create or replace a recurring run (cron, recipe, input; options time_zone, overlap, run_options). Returns (schedule_id, next_fire_at). At most settings.max_schedules_per_workspace schedules a workspace, firings at least settings.min_schedule_interval_s apart. Errors: 22023, ZF003, ZF005.';

-- Name: set_global_limits(jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.set_global_limits(p_options jsonb) RETURNS TABLE(max_in_flight integer)
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

ALTER FUNCTION pgflight.set_global_limits(p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION set_global_limits(p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.set_global_limits(p_options jsonb) IS 'Set the global max_in_flight (null removes). Errors: 22023.';

-- Name: set_recipe_limits(text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.set_recipe_limits(p_recipe text, p_options jsonb) RETURNS TABLE(recipe text, starts_per_s double precision, burst double precision, paused_at timestamp with time zone, paused_by text)
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

ALTER FUNCTION pgflight.set_recipe_limits(p_recipe text, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION set_recipe_limits(p_recipe text, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.set_recipe_limits(p_recipe text, p_options jsonb) IS 'Set (or with starts_per_s null, remove) a recipe''s claim rate starts_per_s/burst. Errors: 22023.';

-- Name: set_tool_policy(text, text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.set_tool_policy(p_workspace text, p_tool text, p_policy jsonb) RETURNS TABLE(workspace text, tool_name text, action text, condition text, over_usd numeric, updated_at timestamp with time zone, updated_by text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v_ws bigint;
  v_action text;
  v_cond jsonpath;
  v_usd numeric;
  v_max_name integer := (select s.max_name_bytes from pgflight.settings s);
begin
  if p_workspace is null or p_tool is null or btrim(p_tool) = '' or p_policy is null then
    raise exception using errcode = '22023',
      message = format('set_tool_policy refused: %s is required',
                       case when p_workspace is null then 'the workspace'
                            when p_policy is null then 'the policy' else 'the tool name' end),
      hint = 'Pass a workspace, a tool name (or ''*'') and a policy such as {"action": "require_approval"}.';
  end if;
  v_ws := pgflight._workspace_id(p_workspace);
  perform pgflight._require_lane('operator', v_ws, 'set_tool_policy');
  perform pgflight._require_cap('max_name_bytes', v_max_name, octet_length(p_tool), 'tool name (bytes)');
  perform pgflight._require_known_keys(p_policy, array['action', 'when', 'over_usd']);
  v_action := case when jsonb_typeof(p_policy -> 'action') = 'string' then p_policy ->> 'action' end;
  if v_action is null or v_action not in ('allow', 'deny', 'require_approval') then
    raise exception using errcode = '22023', message = 'set_tool_policy refused: action must be allow, deny or require_approval',
      detail = format('got %s', left(coalesce((p_policy -> 'action')::text, 'nothing'), 100)),
      hint = 'Pass {"action": "allow" | "deny" | "require_approval"}, optionally with "when" and "over_usd".';
  end if;
  if p_policy ? 'when' and jsonb_typeof(p_policy -> 'when') <> 'null' then
    if jsonb_typeof(p_policy -> 'when') <> 'string' then
      raise exception using errcode = '22023', message = 'set_tool_policy refused: when must be a JSON path as a string',
        detail = format('got a JSON %s', jsonb_typeof(p_policy -> 'when')),
        hint = 'For example {"action": "require_approval", "when": "$.amount ? (@ > 100)"}.';
    end if;
    perform pgflight._require_cap('max_name_bytes', v_max_name, octet_length(p_policy ->> 'when'), 'when path (bytes)');
    begin
      v_cond := (p_policy ->> 'when')::jsonpath;
    exception when others then
      raise exception using errcode = '22023', message = 'set_tool_policy refused: when is not a JSON path',
        detail = left(sqlerrm, 200),
        hint = 'Write a PostgreSQL jsonpath, for example "$.to ? (@ like_regex \"^prod\")".';
    end;
  end if;
  if p_policy ? 'over_usd' and jsonb_typeof(p_policy -> 'over_usd') <> 'null' then
    if jsonb_typeof(p_policy -> 'over_usd') <> 'number' or (p_policy ->> 'over_usd')::numeric not between 0 and 1e9 then
      raise exception using errcode = '22023', message = 'set_tool_policy refused: over_usd must be a number from 0 to 1e9',
        detail = format('got %s', left((p_policy -> 'over_usd')::text, 100)),
        hint = 'USD the agent run has spent before the action applies.';
    end if;
    v_usd := round((p_policy ->> 'over_usd')::numeric, 8);
  end if;
  insert into pgflight.tool_policies as t (workspace_id, tool_name, action, condition, over_usd, updated_at, updated_by)
  values (v_ws, p_tool, v_action, v_cond, v_usd, pgflight._now(), session_user)
  on conflict on constraint tool_policies_pkey do update
     set action = excluded.action, condition = excluded.condition, over_usd = excluded.over_usd,
         updated_at = excluded.updated_at, updated_by = excluded.updated_by;
  return query
    select p_workspace, t.tool_name, t.action, t.condition::text, t.over_usd, t.updated_at, t.updated_by
      from pgflight.tool_policies t where t.workspace_id = v_ws and t.tool_name = p_tool;
end
$_$;

ALTER FUNCTION pgflight.set_tool_policy(p_workspace text, p_tool text, p_policy jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION set_tool_policy(p_workspace text, p_tool text, p_policy jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.set_tool_policy(p_workspace text, p_tool text, p_policy jsonb) IS 'Set a workspace''s policy for a tool (or ''*''): {"action": allow|deny|require_approval, "when": jsonpath on the arguments, "over_usd": USD spent by the agent}; applied by mark_tool_call before the tool runs. Errors: 22023, ZF003, ZF005, ZF012.';

-- Name: set_workspace_limits(text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.set_workspace_limits(p_workspace text, p_options jsonb) RETURNS TABLE(workspace text, max_in_flight integer, share integer, starts_per_s double precision, burst double precision, model_tokens_per_min bigint, paused_at timestamp with time zone, paused_by text)
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

ALTER FUNCTION pgflight.set_workspace_limits(p_workspace text, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION set_workspace_limits(p_workspace text, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.set_workspace_limits(p_workspace text, p_options jsonb) IS 'Set a workspace''s max_in_flight, share, starts_per_s/burst, model_tokens_per_min (null removes). Errors: 22023, ZF003.';

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

ALTER FUNCTION pgflight.spawn_children(p_attempt_id bigint, p_token bigint, p_children jsonb, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION spawn_children(p_attempt_id bigint, p_token bigint, p_children jsonb, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.spawn_children(p_attempt_id bigint, p_token bigint, p_children jsonb, p_options jsonb) IS 'Fan-out: create child steps (idempotent by key) and park the parent in awaiting_children. Returns (children_total, created, parked). Options: fail_fast (boolean). Each child''s options: priority, max_attempts, lease_s, max_runtime_s, backoff, concurrency_key, concurrency_limit, as submit_run (docs/options.md). Errors: ZF001, ZF002, ZF003, ZF005, ZF012, 22023.';

-- Name: start_step(bigint, bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.start_step(p_attempt_id bigint, p_token bigint) RETURNS TABLE(attempt_id bigint, started_at timestamp with time zone, lease_expires_at timestamp with time zone)
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

ALTER FUNCTION pgflight.start_step(p_attempt_id bigint, p_token bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION start_step(p_attempt_id bigint, p_token bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.start_step(p_attempt_id bigint, p_token bigint) IS 'claimed -> running. Errors: ZF001 lease lost, ZF002 cancelled, ZF003 unknown attempt, ZF012 another login''s attempt.';

-- Name: stream_channels(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.stream_channels(p_run_id bigint) RETURNS TABLE(channel text, last_seq bigint, total_bytes bigint, updated_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_readable_run(p_run_id, 'stream_channels');
  return query select s.channel, s.last_seq, s.total_bytes, s.updated_at
                 from pgflight.streams s where s.run_id = p_run_id order by s.channel;
end
$$;

ALTER FUNCTION pgflight.stream_channels(p_run_id bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION stream_channels(p_run_id bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.stream_channels(p_run_id bigint) IS 'Read: the streams of a run: channel, last_seq, total_bytes, updated_at, by channel. Errors: 22023, ZF003 unknown run (also a run of a workspace the login may not read).';

-- Name: stream_read(bigint, text, bigint, integer, double precision); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.stream_read(p_run_id bigint, p_channel text, p_after_seq bigint DEFAULT 0, p_limit integer DEFAULT 1000, p_wait_s double precision DEFAULT 0) RETURNS TABLE(seq bigint, attempt_no integer, attempt_id bigint, step_id bigint, chunk text, written_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_until timestamptz;
begin
  perform pgflight._require_readable_run(p_run_id, 'stream_read');
  if p_channel is null or btrim(p_channel) = '' then
    raise exception using errcode = '22023', message = 'stream_read refused: the channel is required',
      hint = 'Name the stream the run writes, e.g. ''tokens''.';
  end if;
  perform pgflight._check_arg('after_seq', p_after_seq, 0, 9.2e18);
  perform pgflight._require_limit('limit', p_limit, 10000);
  perform pgflight._check_arg('wait_s', p_wait_s, 0, 60);
  v_until := clock_timestamp() + make_interval(secs => p_wait_s);
  loop
    return query
      select c.seq, c.attempt_no, c.attempt_id, c.step_id, c.chunk, c.written_at
        from pgflight.stream_chunks c
       where c.run_id = p_run_id and c.channel = p_channel and c.seq > p_after_seq
       order by c.seq
       limit p_limit;
    exit when found or clock_timestamp() >= v_until;
    perform pg_sleep(least(0.02, greatest(extract(epoch from v_until - clock_timestamp()), 0)));
  end loop;
end
$$;

ALTER FUNCTION pgflight.stream_read(p_run_id bigint, p_channel text, p_after_seq bigint, p_limit integer, p_wait_s double precision) OWNER TO pgflight_owner;

-- Name: FUNCTION stream_read(p_run_id bigint, p_channel text, p_after_seq bigint, p_limit integer, p_wait_s double precision); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.stream_read(p_run_id bigint, p_channel text, p_after_seq bigint, p_limit integer, p_wait_s double precision) IS 'Read: chunks of a run''s stream with seq > p_after_seq in order (at most p_limit, 1..10,000): seq, attempt_no, attempt_id, step_id, chunk (text), written_at; waits up to p_wait_s (0..60 s, polling every 20 ms) for the first one. Errors: 22023 bad argument, ZF003 unknown run (also a run of a workspace the login may not read).';

-- Name: stream_write(bigint, bigint, text, text[], jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.stream_write(p_attempt_id bigint, p_token bigint, p_channel text, p_chunks text[], p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(first_seq bigint, last_seq bigint, total_bytes bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_caps record;
  v_att pgflight.step_attempts;
  v_n integer := coalesce(cardinality(p_chunks), 0);
  v_max integer;
  v_bytes bigint;
  v_head record;
  v_now timestamptz := pgflight._now();  -- one time per call: a batch's chunks share it
begin
  perform pgflight._check_options('stream_write', p_options);
  if p_channel is null or btrim(p_channel) = '' then
    raise exception using errcode = '22023', message = 'stream_write refused: the channel is required',
      hint = 'Name the stream within the run, e.g. ''tokens'' or ''progress''.';
  end if;
  if p_chunks is null or array_ndims(p_chunks) > 1 or array_position(p_chunks, null) is not null then
    raise exception using errcode = '22023',
      message = 'stream_write refused: the chunks must be a one-dimensional array of texts without NULLs',
      detail = case when p_chunks is null then 'got NULL' when array_ndims(p_chunks) > 1 then
                 format('got %s dimensions', array_ndims(p_chunks)) else
                 format('chunk %s is NULL', array_position(p_chunks, null)) end,
      hint = 'Pass text[]: ''{}'' writes nothing.';
  end if;
  select s.max_name_bytes, s.max_stream_chunks_per_call, s.max_stream_chunk_bytes, s.max_stream_bytes
    into v_caps from pgflight.settings s;
  perform pgflight._require_cap('max_name_bytes', v_caps.max_name_bytes, octet_length(p_channel),
                                'stream channel (bytes)');
  perform pgflight._require_cap('max_stream_chunks_per_call', v_caps.max_stream_chunks_per_call, v_n,
                                'chunks of one stream_write call');
  select max(octet_length(c)), coalesce(sum(octet_length(c)), 0) into v_max, v_bytes from unnest(p_chunks) c;
  perform pgflight._require_cap('max_stream_chunk_bytes', v_caps.max_stream_chunk_bytes, coalesce(v_max, 0),
                                'stream chunk (bytes)');
  v_att := pgflight._lock_held(p_attempt_id, p_token, 'stream_write');

  if v_n = 0 then
    return query select null::bigint, coalesce(max(s.last_seq), 0), coalesce(max(s.total_bytes), 0)
                   from pgflight.streams s where s.run_id = v_att.run_id and s.channel = p_channel;
    return;
  end if;
  insert into pgflight.streams as s (run_id, channel, workspace_id, last_seq, total_bytes)
  values (v_att.run_id, p_channel, v_att.workspace_id, v_n, v_bytes)
  on conflict (run_id, channel) do update
     set last_seq = s.last_seq + v_n, total_bytes = s.total_bytes + v_bytes, updated_at = v_now
  returning s.last_seq, s.total_bytes into v_head;
  perform pgflight._require_cap('max_stream_bytes', v_caps.max_stream_bytes, v_head.total_bytes,
                                format('stream %s of run %s (bytes, with this call)', left(p_channel, 100), v_att.run_id));
  insert into pgflight.stream_chunks (run_id, channel, seq, attempt_id, attempt_no, step_id, chunk, written_at)
  select v_att.run_id, p_channel, v_head.last_seq - v_n + c.ord, v_att.id, v_att.attempt_no, v_att.step_id, c.chunk,
         v_now
    from unnest(p_chunks) with ordinality c(chunk, ord);
  return query select v_head.last_seq - v_n + 1, v_head.last_seq, v_head.total_bytes;
end
$$;

ALTER FUNCTION pgflight.stream_write(p_attempt_id bigint, p_token bigint, p_channel text, p_chunks text[], p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION stream_write(p_attempt_id bigint, p_token bigint, p_channel text, p_chunks text[], p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.stream_write(p_attempt_id bigint, p_token bigint, p_channel text, p_chunks text[], p_options jsonb) IS 'Worker: append chunks (text[], in order) to stream p_channel of the attempt''s run; each gets the next seq and the attempt''s id and number. Returns first_seq, last_seq (null, last when none was sent), total_bytes of the stream. Caps: settings.max_stream_chunks_per_call, max_stream_chunk_bytes, max_stream_bytes, max_name_bytes (the channel). Errors: 22023, ZF001, ZF002, ZF003, ZF005, ZF012.';

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

ALTER FUNCTION pgflight.submit_run(p_workspace text, p_recipe text, p_input jsonb, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION submit_run(p_workspace text, p_recipe text, p_input jsonb, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.submit_run(p_workspace text, p_recipe text, p_input jsonb, p_options jsonb) IS 'Submit a run (root step of a recipe). Returns (run_id, step_id, attempt_id, created). Options (docs/options.md): idempotency_key, priority, max_attempts, lease_s, max_runtime_s, backoff {base_s, factor, max_s, jitter}, not_before (with a UTC offset) or delay_s, concurrency_key and concurrency_limit, max_usd, max_wall_s, max_iterations, max_tool_calls, submitted_by, traceparent (W3C trace context); an unknown key or a value out of bounds is 22023 naming it. Errors: 22023, ZF003 unknown workspace, ZF004 idempotency conflict, ZF005 input too large.';

-- Name: submit_runs(text, jsonb, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.submit_runs(p_workspace text, p_runs jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(idx integer, run_id bigint, step_id bigint, attempt_id bigint, created boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
  v_now timestamptz := pgflight._now();
  v_ws bigint;
  v_ws_max_usd numeric;
  v_settings pgflight.settings;
  v_shared jsonb;
  v_idx integer;              -- the element being checked, named by the error
  v_opts record;
  v_norm jsonb[] := '{}';     -- each distinct options object of the call (the key set apart), normalised
  v_start timestamptz[] := '{}';  -- ... and when its runs become claimable
  v_i integer[];              -- per element that creates a run: its position, ...
  v_recipe text[];
  v_input jsonb[];
  v_key text[];
  v_g integer[];              -- ... its options group (v_norm[g], v_start[g]), ...
  v_hash text[];
  v_any_key boolean;          -- some element has an idempotency key
  v_n integer;
  v_k integer;
  v_srr text;                 -- session_replication_role to restore after the writes (null: not switched)
  v_common boolean;           -- v_any_key false and one options group
  -- per options group g, each option the writes read, read once (not once per row)
  v_sub text[] := '{}';
  v_usd numeric[] := '{}';
  v_wall double precision[] := '{}';
  v_iter integer[] := '{}';
  v_tools integer[] := '{}';
  v_prio integer[] := '{}';
  v_maxatt integer[] := '{}';
  v_backoff jsonb[] := '{}';
  v_lease double precision[] := '{}';
  v_maxrt double precision[] := '{}';
  v_ckey text[] := '{}';
  v_climit integer[] := '{}';
  v_made bigint[];            -- runs inserted (a key that exists inserts none)
  v_keep bigint[];
  v_created integer[];        -- the elements that created a run, with its ids
  v_run_ids bigint[];
  v_step_ids bigint[];
  v_attempt_ids bigint[];
  v_ready boolean;
  v_state text;
  v_msg text;
  v_detail text;
  v_hint text;
begin
  if p_runs is null or jsonb_typeof(p_runs) <> 'array' then
    raise exception using errcode = '22023', message = 'runs must be a JSON array',
      detail = format('got %s', coalesce('a JSON ' || jsonb_typeof(p_runs), 'NULL')),
      hint = 'e.g. [{"recipe": "send_email", "input": {"to": "a@b.c"}, "options": {"idempotency_key": "mail-1"}}]';
  end if;
  select * into v_settings from pgflight.settings;
  perform pgflight._require_cap('max_runs_per_call', v_settings.max_runs_per_call, jsonb_array_length(p_runs),
                                'runs in one submit_runs call');
  select w.id, w.max_run_usd into v_ws, v_ws_max_usd from pgflight._submit_runs_workspace(p_workspace) w;
  v_shared := pgflight._check_options('submit_run', p_options);
  if v_shared ? 'idempotency_key' then
    raise exception using errcode = '22023', message = 'option idempotency_key of submit_runs is per run',
      detail = 'p_options holds the options every element shares; one key would name every run',
      hint = 'Put each run''s idempotency_key in its element''s options.';
  end if;
  perform pgflight._submit_runs_require_depth(p_runs, v_settings.max_json_depth);
  if jsonb_array_length(p_runs) = 0 then
    return;
  end if;

  begin
    -- the first malformed element (its shape, recipe, keys, input size, key) and whether any
    -- element has an idempotency key, in one pass
    select (min(e.ord) filter (where jsonb_typeof(e.value) <> 'object'
                    or jsonb_typeof(e.value -> 'recipe') is distinct from 'string' or btrim(e.value ->> 'recipe') = ''
                    or length(e.value ->> 'recipe') > 256
                    or e.value - '{recipe,input,options}'::text[] <> '{}'
                    or jsonb_typeof(e.value -> 'options') not in ('object', 'null')
                    or jsonb_typeof(e.value -> 'options' -> 'idempotency_key') not in ('string', 'null')
                    or length(e.value -> 'options' ->> 'idempotency_key') not between 1 and 512
                    or octet_length(coalesce(e.value -> 'input', '{}')::text) > v_settings.max_input_bytes))::integer,
           coalesce(bool_or(e.value -> 'options' ->> 'idempotency_key' is not null), false)
      into v_idx, v_any_key
      from jsonb_array_elements(p_runs) with ordinality as e(value, ord);
    if v_idx is not null then
      perform pgflight._submit_runs_refuse_element(p_runs -> (v_idx - 1), v_settings.max_input_bytes);
    end if;

    -- each distinct options object once (a bulk submit mostly repeats one), checked in element
    -- order; v_norm[g] is the normalised object of group g (its rank in jsonb order, which the
    -- writes below compute again per element: a subscript, no join)
    for v_opts in
      select min(e.ord)::integer as ord, e.raw, dense_rank() over (order by e.raw)::integer as g
        from (select e.ord, v_shared || coalesce(nullif(e.value -> 'options', 'null'), '{}') - 'idempotency_key' as raw
                from jsonb_array_elements(p_runs) with ordinality as e(value, ord)) e
       group by e.raw
       order by 1
    loop
      v_idx := v_opts.ord;
      v_norm[v_opts.g] := pgflight._check_options('submit_run', v_opts.raw);
      v_start[v_opts.g] := v_now;
      -- the flow options read by the same helpers as submit_run
      if v_norm[v_opts.g] ?| array['delay_s', 'not_before', 'concurrency_key', 'concurrency_limit'] then
        v_start[v_opts.g] := pgflight._start_at(v_norm[v_opts.g], v_now);
        perform pgflight._concurrency_option(v_norm[v_opts.g]);
      end if;
    end loop;
  exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text,
                            v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    if v_detail = '' then
      raise exception using errcode = v_state, message = format('submit_runs element %s: %s', v_idx, v_msg),
        hint = v_hint;
    end if;
    raise exception using errcode = v_state, message = format('submit_runs element %s: %s', v_idx, v_msg),
      detail = v_detail, hint = v_hint;
  end;

  -- each option the writes read, once per options group (a subscript per row below, not a jsonb
  -- lookup and a cast per row and column)
  for v_k in 1 .. cardinality(v_norm) loop
    v_sub[v_k] := coalesce(v_norm[v_k] ->> 'submitted_by', session_user::text);
    v_usd[v_k] := coalesce((v_norm[v_k] ->> 'max_usd')::numeric, v_ws_max_usd);
    v_wall[v_k] := (v_norm[v_k] ->> 'max_wall_s')::double precision;
    v_iter[v_k] := (v_norm[v_k] ->> 'max_iterations')::integer;
    v_tools[v_k] := (v_norm[v_k] ->> 'max_tool_calls')::integer;
    v_prio[v_k] := coalesce((v_norm[v_k] ->> 'priority')::integer, 0);
    v_maxatt[v_k] := coalesce((v_norm[v_k] ->> 'max_attempts')::integer, v_settings.default_max_attempts);
    v_backoff[v_k] := coalesce(v_norm[v_k] -> 'backoff', '{}');
    v_lease[v_k] := (v_norm[v_k] ->> 'lease_s')::double precision;
    v_maxrt[v_k] := (v_norm[v_k] ->> 'max_runtime_s')::double precision;
    v_ckey[v_k] := v_norm[v_k] ->> 'concurrency_key';
    v_climit[v_k] := case when v_norm[v_k] ? 'concurrency_key'
                          then coalesce((v_norm[v_k] ->> 'concurrency_limit')::integer, 1) end;
  end loop;

  -- The writes. Every id is drawn first, per element, into arrays (a key's first element creates
  -- its run, later ones read it afterwards); then one INSERT per table reads the arrays side by
  -- side, with no join between the inserted rows.
  v_n := jsonb_array_length(p_runs);
  v_common := not v_any_key and cardinality(v_norm) = 1;
  if v_common then
    -- the common shape (one options object, no key): one pass over the elements in their order,
    -- no sort (aggregates over a function scan read its rows in order); every element is group 1
    select array_agg(e.ord::integer), array_agg(e.value ->> 'recipe'), array_agg(coalesce(e.value -> 'input', '{}')),
           array_agg(encode(sha256(convert_to(coalesce(e.value -> 'input', '{}')::text, 'UTF8')), 'hex')),
           array_agg(nextval('pgflight.runs_id_seq'::regclass)),
           array_agg(nextval('pgflight.steps_id_seq'::regclass)),
           array_agg(nextval('pgflight.step_attempts_id_seq'::regclass))
      into v_i, v_recipe, v_input, v_hash, v_run_ids, v_step_ids, v_attempt_ids
      from jsonb_array_elements(p_runs) with ordinality as e(value, ord);
    v_key := array_fill(null::text, array[v_n]);
    v_g := array_fill(1, array[v_n]);
  else
    -- options groups (dense_rank: the loop's g) and, per key, its first element (row_number);
    -- one sort into element order for all the arrays (they are aligned whatever the order: one
    -- aggregate pass)
    select array_agg(p.i), array_agg(p.recipe), array_agg(p.input), array_agg(p.key), array_agg(p.g), array_agg(p.hash),
           array_agg(nextval('pgflight.runs_id_seq'::regclass)),
           array_agg(nextval('pgflight.steps_id_seq'::regclass)),
           array_agg(nextval('pgflight.step_attempts_id_seq'::regclass))
      into v_i, v_recipe, v_input, v_key, v_g, v_hash, v_run_ids, v_step_ids, v_attempt_ids
      from (select p.* from
             (select e.ord::integer as i, e.value ->> 'recipe' as recipe, coalesce(e.value -> 'input', '{}') as input,
                     e.value -> 'options' ->> 'idempotency_key' as key,
                     dense_rank() over (order by v_shared || coalesce(nullif(e.value -> 'options', 'null'), '{}')
                                                 - 'idempotency_key')::integer as g,
                     encode(sha256(convert_to(coalesce(e.value -> 'input', '{}')::text, 'UTF8')), 'hex') as hash,
                     row_number() over (partition by e.value -> 'options' ->> 'idempotency_key' order by e.ord) as nth
                from jsonb_array_elements(p_runs) with ordinality as e(value, ord)) p
             where p.key is null or p.nth = 1
             order by p.i) p;
  end if;

  -- The foreign keys of the rows written below hold by construction: each
  -- run names the workspace locked FOR KEY SHARE above (what the runs_workspace_id_fkey check
  -- takes), each root step a run and each attempt a step inserted here, in this transaction, that
  -- no other session can see or delete before it commits. Their checks are per-row triggers, one
  -- SPI query each (three per element: 40 % of a 10,000-element call's server time), so a call of
  -- at least 500 elements writes with session_replication_role = replica (no ordinary trigger
  -- fires; step_attempts_fill_flow would not anyway, the attempts carry their workspace), when
  -- the owner may set it (roles/owner_sets_replication_role; granted only by a superuser's
  -- deploy). Set locally (set_config's is_local) and reset right after the inserts; an error in
  -- between rolls it back with the transaction or the caller's savepoint. So a trigger a DBA adds
  -- to runs, steps or step_attempts does not fire for the rows of such a call (docs/security.md;
  -- revoking the grant keeps every trigger). Changing it resets the session's cached plans, which
  -- a call this large does not notice.
  v_srr := case when v_n >= 500 then pgflight._row_triggers_off() end;

  if v_common then
    -- the common shape: nothing can conflict (no key), so the runs, their root steps and first
    -- attempts are one statement, read from the arrays side by side
    with new_runs as (
      insert into pgflight.runs (id, workspace_id, recipe, idempotency_key, input_hash, submitted_by, options,
                                 max_usd, max_wall_s, max_iterations, max_tool_calls, created_at, root_step_id)
      overriding system value  -- the ids drawn above
      select u.run_id, v_ws, u.recipe, null, u.hash, v_sub[1], v_norm[1], v_usd[1], v_wall[1], v_iter[1], v_tools[1],
             v_now, u.step_id
        from unnest(v_run_ids, v_step_ids, v_recipe, v_hash) as u(run_id, step_id, recipe, hash)
    ), new_steps as (
      insert into pgflight.steps (id, run_id, parent_id, depth, step_key, recipe, input, priority, max_attempts,
                                  backoff, lease_s, max_runtime_s, created_at, concurrency_key, concurrency_limit)
      select u.step_id, u.run_id, null, 0, 'root', u.recipe, u.input, v_prio[1], v_maxatt[1], v_backoff[1],
             v_lease[1], v_maxrt[1], v_now, v_ckey[1], v_climit[1]
        from unnest(v_run_ids, v_step_ids, v_recipe, v_input) as u(run_id, step_id, recipe, input)
    )
    insert into pgflight.step_attempts (id, step_id, run_id, attempt_no, recipe, priority, status, available_after,
                                        created_at, workspace_id, concurrency_key, concurrency_limit, queue_event_id)
    overriding system value
    select u.attempt_id, u.step_id, u.run_id, 1, u.recipe, v_prio[1], 'queued', v_start[1], v_now, v_ws,
           v_ckey[1], v_climit[1], nextval('pgflight.events_id_seq')
      from unnest(v_run_ids, v_step_ids, v_attempt_ids, v_recipe) as u(run_id, step_id, attempt_id, recipe);
  else
    -- runs in key order (see above); a key another transaction holds makes this wait for it.
    -- Keyless runs are a plain INSERT (nothing can conflict: no speculative insertion), the
    -- keyed ones go through ON CONFLICT against the partial index (tables/runs_idempotency_partial).
    with src as (
      select u.run_id as id, v_ws as workspace_id, u.recipe, u.key as idempotency_key, u.hash as input_hash,
             v_sub[u.g] as submitted_by,
             -- the run's options as submit_run keeps them, its key included
             case when u.key is null then v_norm[u.g] else v_norm[u.g] || jsonb_build_object('idempotency_key', u.key) end
               as options,
             v_usd[u.g] as max_usd, v_wall[u.g] as max_wall_s, v_iter[u.g] as max_iterations,
             v_tools[u.g] as max_tool_calls,
             v_now as created_at, u.step_id as root_step_id, u.i
        from unnest(v_run_ids, v_step_ids, v_recipe, v_key, v_hash, v_g, v_i) as u(run_id, step_id, recipe, key, hash, g, i)
    ), keyless as (
      insert into pgflight.runs (id, workspace_id, recipe, idempotency_key, input_hash, submitted_by, options,
                                 max_usd, max_wall_s, max_iterations, max_tool_calls, created_at, root_step_id)
      overriding system value  -- the ids drawn above
      select s.id, s.workspace_id, s.recipe, s.idempotency_key, s.input_hash, s.submitted_by, s.options,
             s.max_usd, s.max_wall_s, s.max_iterations, s.max_tool_calls, s.created_at, s.root_step_id
        from src s where s.idempotency_key is null
      returning id
    ), keyed as (
      insert into pgflight.runs (id, workspace_id, recipe, idempotency_key, input_hash, submitted_by, options,
                                 max_usd, max_wall_s, max_iterations, max_tool_calls, created_at, root_step_id)
      overriding system value
      select s.id, s.workspace_id, s.recipe, s.idempotency_key, s.input_hash, s.submitted_by, s.options,
             s.max_usd, s.max_wall_s, s.max_iterations, s.max_tool_calls, s.created_at, s.root_step_id
        from src s where s.idempotency_key is not null
       order by s.idempotency_key, s.i
      on conflict (workspace_id, idempotency_key) where idempotency_key is not null do nothing
      returning id
    ), made as (
      select k.id from keyless k union all select k.id from keyed k
    )
    select array_agg(m.id) into v_made from made m;

    if coalesce(cardinality(v_made), 0) < cardinality(v_run_ids) then
      -- some keys existed: keep the elements whose run was made
      select array_agg(u.ord order by u.ord) into v_keep
        from unnest(v_run_ids) with ordinality as u(id, ord)
       where u.id in (select unnest(v_made));
      select array_agg(v_i[k]), array_agg(v_recipe[k]), array_agg(v_input[k]), array_agg(v_g[k]),
             array_agg(v_run_ids[k]), array_agg(v_step_ids[k]), array_agg(v_attempt_ids[k])
        into v_i, v_recipe, v_input, v_g, v_run_ids, v_step_ids, v_attempt_ids
        from unnest(coalesce(v_keep, '{}')) as k;
    end if;

    with new_steps as (
      insert into pgflight.steps (id, run_id, parent_id, depth, step_key, recipe, input, priority, max_attempts,
                                  backoff, lease_s, max_runtime_s, created_at, concurrency_key, concurrency_limit)
      select u.step_id, u.run_id, null, 0, 'root', u.recipe, u.input, v_prio[u.g], v_maxatt[u.g], v_backoff[u.g],
             v_lease[u.g], v_maxrt[u.g], v_now, v_ckey[u.g], v_climit[u.g]
        from unnest(v_run_ids, v_step_ids, v_recipe, v_input, v_g) as u(run_id, step_id, recipe, input, g)
    )
    -- each run's queued event is its attempt's queue_event_id, shown by run_events (no
    -- events row), drawn in the runs' order (the order unnest reads them)
    insert into pgflight.step_attempts (id, step_id, run_id, attempt_no, recipe, priority, status, available_after,
                                        created_at, workspace_id, concurrency_key, concurrency_limit, queue_event_id)
    overriding system value
    select u.attempt_id, u.step_id, u.run_id, 1, u.recipe, v_prio[u.g], 'queued', v_start[u.g], v_now, v_ws,
           v_ckey[u.g], v_climit[u.g], nextval('pgflight.events_id_seq')
      from unnest(v_run_ids, v_step_ids, v_attempt_ids, v_recipe, v_g) as u(run_id, step_id, attempt_id, recipe, g);
  end if;
  if v_srr is not null then
    perform pgflight._row_triggers_on(v_srr);  -- a definer of pgflight_privileged: the owner may not set it
  end if;
  v_created := v_i;
  if v_common then
    v_ready := v_start[1] <= v_now;
  else
    select coalesce(bool_or(v_start[g] <= v_now), false) into v_ready from unnest(v_g) as g;
  end if;

  if coalesce(cardinality(v_created), 0) < jsonb_array_length(p_runs) then
    perform pgflight._submit_runs_refuse_conflict(p_runs, v_ws, v_created);
  end if;

  if v_ready then
    perform pgflight._notify_ready();  -- one per call
  end if;
  if v_common then
    -- every element created its run, and v_i is in element order: no union, no sort
    return query
      select c.i, c.run_id, c.step_id, c.attempt_id, true
        from unnest(v_i, v_run_ids, v_step_ids, v_attempt_ids) as c(i, run_id, step_id, attempt_id);
    return;
  end if;
  return query
    select c.i, c.run_id, c.step_id, c.attempt_id, true
      from unnest(v_created, v_run_ids, v_step_ids, v_attempt_ids) as c(i, run_id, step_id, attempt_id)
    union all
    select e.ord::integer, r.id, r.root_step_id,
           (select a.id from pgflight.step_attempts a where a.step_id = r.root_step_id order by a.attempt_no limit 1),
           false
      from jsonb_array_elements(p_runs) with ordinality as e(value, ord)
      join pgflight.runs r on r.workspace_id = v_ws and r.idempotency_key = e.value -> 'options' ->> 'idempotency_key'
     where coalesce(cardinality(v_created), 0) < jsonb_array_length(p_runs)
       and not exists (select from unnest(v_created) c(i) where c.i = e.ord)
     order by 1;
end
$$;

ALTER FUNCTION pgflight.submit_runs(p_workspace text, p_runs jsonb, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION submit_runs(p_workspace text, p_runs jsonb, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.submit_runs(p_workspace text, p_runs jsonb, p_options jsonb) IS 'Bulk submit: p_runs a JSON array of {recipe, input, options}; each element as submit_run, options laid over the shared p_options (not idempotency_key). All or nothing: a bad element refuses the call, the error prefixed "submit_runs element N: ". Returns (idx, run_id, step_id, attempt_id, created) per element. Errors: 22023, ZF003, ZF004 idempotency conflict (also between two elements), ZF005 over settings.max_runs_per_call or max_input_bytes, ZF012.';

-- Name: sweep_loop(double precision, double precision); Type: PROCEDURE; Schema: pgflight; Owner: pgflight_owner

CREATE PROCEDURE pgflight.sweep_loop(IN p_duration_s double precision DEFAULT 55, IN p_interval_s double precision DEFAULT 5)
    LANGUAGE plpgsql
    AS $$
declare
  v_start timestamptz := pg_catalog.clock_timestamp();
  v_end timestamptz := v_start + pg_catalog.make_interval(secs => p_duration_s);
  v_beat timestamptz;
  v_backlog boolean;
  v_batch integer;
  v_state text;
  v_msg text;
begin
  loop
    -- committed at once: a second loop waiting on the row sees this one's lease, not a lock
    exit when pgflight._sweep_loop_lease(true);
    commit;
    if pg_catalog.clock_timestamp() > v_end then
      raise warning 'pgflight.sweep_loop: another sweep loop held the lease for % s; not sweeping', p_duration_s;
      return;
    end if;
    perform pg_catalog.pg_sleep(0.2);
  end loop;
  commit;
  v_beat := pg_catalog.clock_timestamp();
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
      v_batch := coalesce(nullif(pg_catalog.current_setting('pgflight.sweep_purge_batch', true), ''), '5000')::integer;
      if v_batch > 0 and pgflight.purge_finished(null, v_batch) >= v_batch then
        v_backlog := true;
      end if;
    exception when others then
      get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text;
      raise warning 'pgflight.sweep_loop: a purge pass failed (%): %', v_state, v_msg;
    end;
    commit;
    -- the next beat: the first one still ahead (a long pass skips the beats it overran)
    while v_beat <= pg_catalog.clock_timestamp() loop
      v_beat := v_beat + pg_catalog.make_interval(secs => greatest(p_interval_s, 0.01));
    end loop;
    exit when pg_catalog.clock_timestamp() >= v_end or (not v_backlog and v_beat >= v_end);
    if not v_backlog then
      perform pg_catalog.pg_sleep(pg_catalog.date_part('epoch', v_beat - pg_catalog.clock_timestamp()));
    end if;
  end loop;
  perform pgflight._sweep_loop_lease(false);
  commit;
end
$$;

ALTER PROCEDURE pgflight.sweep_loop(IN p_duration_s double precision, IN p_interval_s double precision) OWNER TO pgflight_owner;

-- Name: PROCEDURE sweep_loop(IN p_duration_s double precision, IN p_interval_s double precision); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON PROCEDURE pgflight.sweep_loop(IN p_duration_s double precision, IN p_interval_s double precision) IS 'Sweep every p_interval_s seconds (a fixed beat) for p_duration_s seconds, one loop at a time, committing after each pass; a failing pass warns and the loop goes on (pg_cron 1.4: sweep_loop(60, 5) each minute).';

-- Name: tool_policies(text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.tool_policies(p_workspace text) RETURNS TABLE(workspace text, tool_name text, action text, condition text, over_usd numeric, updated_at timestamp with time zone, updated_by text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint;
begin
  if p_workspace is null then
    raise exception using errcode = '22023', message = 'tool_policies refused: the workspace is required',
      hint = 'Pass a workspace name.';
  end if;
  v_ws := pgflight._workspace_id(p_workspace);
  perform pgflight._require_lane('reader', v_ws, 'tool_policies');
  return query
    select p_workspace, t.tool_name, t.action, t.condition::text, t.over_usd, t.updated_at, t.updated_by
      from pgflight.tool_policies t where t.workspace_id = v_ws
     order by t.tool_name;
end
$$;

ALTER FUNCTION pgflight.tool_policies(p_workspace text) OWNER TO pgflight_owner;

-- Name: FUNCTION tool_policies(p_workspace text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.tool_policies(p_workspace text) IS 'Read: a workspace''s tool policies (tool_name, action, condition, over_usd, updated_at, updated_by). Errors: 22023, ZF003, ZF012.';

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

ALTER FUNCTION pgflight.uninstall_schedules() OWNER TO pgflight_owner;

-- Name: FUNCTION uninstall_schedules(); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.uninstall_schedules() IS 'Remove pgflight''s pg_cron jobs; returns how many.';

-- Name: unschedule_run(text, text); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.unschedule_run(p_workspace text, p_name text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_lane('operator', pgflight._workspace_id(p_workspace), 'unschedule_run');  -- tenants
  delete from pgflight.schedules s where s.workspace_id = pgflight._workspace_id(p_workspace) and s.name = p_name;
  return found;
end
$$;

ALTER FUNCTION pgflight.unschedule_run(p_workspace text, p_name text) OWNER TO pgflight_owner;

-- Name: FUNCTION unschedule_run(p_workspace text, p_name text); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.unschedule_run(p_workspace text, p_name text) IS 'Remove a schedule by workspace and name; true when removed. Errors: ZF003.';

-- Name: unserved_recipes(text[]); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.unserved_recipes(p_recipes text[]) RETURNS TABLE(recipe text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_lanes bigint[] := pgflight._lane_workspaces('reader');  -- null: every workspace
begin
  if p_recipes is null or cardinality(p_recipes) > 1000 then
    raise exception using errcode = '22023', message = 'unserved_recipes refused: between 0 and 1000 recipe names',
      detail = format('got %s', coalesce(cardinality(p_recipes)::text || ' names', 'null')),
      hint = 'Ask for the recipes of one submission at a time.';
  end if;
  return query
  select distinct n.name
    from unnest(p_recipes) n(name)
   where n.name is not null
     and not exists (select from pgflight.workers w
                      where w.stopped_at is null and w.last_seen_at > v_now - interval '60 seconds'
                        and (w.recipes is null or n.name = any(w.recipes))
                        and (v_lanes is null or exists (
                              select from pgflight.workspace_grants g
                               where g.login = w.login and g.lane = 'worker'
                                 and (g.workspace_id is null or g.workspace_id = any(v_lanes)))))
   order by 1;
end
$$;

ALTER FUNCTION pgflight.unserved_recipes(p_recipes text[]) OWNER TO pgflight_owner;

-- Name: FUNCTION unserved_recipes(p_recipes text[]); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.unserved_recipes(p_recipes text[]) IS 'Read: the recipes among p_recipes (0..1000 names) no live worker (seen in the last 60 s) serves, sorted. Errors: 22023.';

-- Name: wait_event(bigint, bigint, text, text, text, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.wait_event(p_attempt_id bigint, p_token bigint, p_wait_key text, p_name text, p_key text, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(outcome text, payload jsonb, event_id text, waiting boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_opts jsonb := pgflight._check_options('wait_event', p_options);  -- docs/options.md
  v_timeout double precision := pgflight._opt_number(v_opts, 'timeout_s', null, 0, 3153600000, 'wait_event');
  v_default jsonb := v_opts -> 'default';
  v_max_name integer := (select s.max_name_bytes from pgflight.settings s);
  v_att pgflight.step_attempts;
  v_wait pgflight.waits;
  v_event record;
begin
  if p_wait_key is null or btrim(p_wait_key) = '' or p_name is null or btrim(p_name) = '' or p_key is null then
    raise exception using errcode = '22023',
      message = format('wait_event refused: %s is required',
                       case when p_wait_key is null or btrim(p_wait_key) = '' then 'the wait key'
                            when p_name is null or btrim(p_name) = '' then 'the event name' else 'the event key' end),
      hint = 'Pass a wait key, an event name and an event key (the key may be empty, not null).';
  end if;
  perform pgflight._require_cap('max_name_bytes', v_max_name, octet_length(p_wait_key), 'wait key (bytes)');
  perform pgflight._require_cap('max_name_bytes', v_max_name, octet_length(p_name), 'event name (bytes)');
  perform pgflight._require_cap('max_name_bytes', v_max_name, octet_length(p_key), 'event key (bytes)');
  if v_default is not null then
    perform pgflight._require_cap('max_event_payload_bytes',
                                  (select s.max_event_payload_bytes from pgflight.settings s),
                                  octet_length(v_default::text), 'default payload (bytes)');
    perform pgflight._require_json_depth(v_default, 'default payload');
  end if;
  v_att := pgflight._lock_held(p_attempt_id, p_token, 'wait_event');
  perform pgflight._lock_event_channel(v_att.workspace_id, p_name, p_key);

  insert into pgflight.waits (step_id, wait_key, kind, workspace_id, event_name, event_key, due_at,
                              default_payload, requested_at)
  values (v_att.step_id, p_wait_key, 'event', v_att.workspace_id, p_name, p_key,
          v_now + make_interval(secs => v_timeout), v_default, v_now)
  on conflict on constraint waits_step_key_is_unique do nothing;
  select w.* into v_wait from pgflight.waits w
   where w.step_id = v_att.step_id and w.wait_key = p_wait_key for update;
  if v_wait.kind <> 'event' or v_wait.event_name <> p_name or v_wait.event_key <> p_key then
    raise exception using errcode = '22023',
      message = format('wait_event refused: wait key %L of this step names another wait', p_wait_key),
      detail = format('it is a %s wait%s', v_wait.kind,
                      case when v_wait.kind = 'event' then ' for another event name or key' else '' end),
      hint = 'Give each wait of a step its own key.';
  end if;
  if v_wait.outcome is null then
    -- an event emitted before the wait (or by a transaction that committed while this one waited
    -- for the channel row): the newest one still kept
    select e.event_id, e.payload into v_event from pgflight.emitted_events e
     where e.workspace_id = v_att.workspace_id and e.name = p_name and e.key = p_key and e.expires_at > v_now
     order by e.id desc limit 1;
    if found then
      perform pgflight._resolve_wait(v_wait.id, 'received', v_event.payload, v_event.event_id, 'wait_event');
      return query select 'received'::text, v_event.payload, v_event.event_id, false;
      return;
    elsif v_wait.due_at <= v_now then
      perform pgflight._resolve_wait(v_wait.id, 'timed_out', v_wait.default_payload, null, 'wait_event');
      return query select 'timed_out'::text, v_wait.default_payload, null::text, false;
      return;
    end if;
    perform pgflight._park_on_wait(v_att, v_wait);
    return query select null::text, null::jsonb, null::text, true;
    return;
  end if;
  return query select v_wait.outcome, v_wait.payload, v_wait.event_id, false;
end
$$;

ALTER FUNCTION pgflight.wait_event(p_attempt_id bigint, p_token bigint, p_wait_key text, p_name text, p_key text, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION wait_event(p_attempt_id bigint, p_token bigint, p_wait_key text, p_name text, p_key text, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.wait_event(p_attempt_id bigint, p_token bigint, p_wait_key text, p_name text, p_key text, p_options jsonb) IS 'Wait for an event (name, key) of the attempt''s workspace: the outcome (received with the payload, or timed_out with the default) at once when known, else parks the attempt (waiting = true). Options: timeout_s, default. Errors: 22023, ZF001, ZF002, ZF003, ZF005, ZF012.';

-- Name: wait_timer(bigint, bigint, text, double precision, jsonb); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.wait_timer(p_attempt_id bigint, p_token bigint, p_wait_key text, p_seconds double precision, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(outcome text, due_at timestamp with time zone, waiting boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_att pgflight.step_attempts;
  v_wait pgflight.waits;
begin
  perform pgflight._check_options('wait_timer', p_options);  -- takes none: any key is 22023 naming it
  if p_wait_key is null or btrim(p_wait_key) = '' then
    raise exception using errcode = '22023', message = 'wait_timer refused: the wait key is required',
      hint = 'Name the timer within the step, e.g. ''cool-off''.';
  end if;
  perform pgflight._require_cap('max_name_bytes', (select s.max_name_bytes from pgflight.settings s),
                                octet_length(p_wait_key), 'wait key (bytes)');
  if p_seconds is null then
    raise exception using errcode = '22023', message = 'wait_timer refused: seconds is null',
      hint = 'Pass the seconds to sleep, 0 or more.';
  end if;
  perform pgflight._check_arg('seconds', p_seconds, 0, 3153600000);
  v_att := pgflight._lock_held(p_attempt_id, p_token, 'wait_timer');

  insert into pgflight.waits (step_id, wait_key, kind, workspace_id, due_at, requested_at)
  values (v_att.step_id, p_wait_key, 'timer', v_att.workspace_id, v_now + make_interval(secs => p_seconds), v_now)
  on conflict on constraint waits_step_key_is_unique do nothing;
  select w.* into v_wait from pgflight.waits w
   where w.step_id = v_att.step_id and w.wait_key = p_wait_key for update;
  if v_wait.kind <> 'timer' then
    raise exception using errcode = '22023',
      message = format('wait_timer refused: wait key %L of this step is an %s wait', p_wait_key, v_wait.kind),
      hint = 'Give each wait of a step its own key.';
  end if;
  if v_wait.outcome is null and v_wait.due_at <= v_now then
    perform pgflight._resolve_wait(v_wait.id, 'elapsed', null, null, 'wait_timer');
    v_wait.outcome := 'elapsed';
  end if;
  if v_wait.outcome is not null then
    return query select v_wait.outcome, v_wait.due_at, false;
    return;
  end if;
  perform pgflight._park_on_wait(v_att, v_wait);
  return query select null::text, v_wait.due_at, true;
end
$$;

ALTER FUNCTION pgflight.wait_timer(p_attempt_id bigint, p_token bigint, p_wait_key text, p_seconds double precision, p_options jsonb) OWNER TO pgflight_owner;

-- Name: FUNCTION wait_timer(p_attempt_id bigint, p_token bigint, p_wait_key text, p_seconds double precision, p_options jsonb); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.wait_timer(p_attempt_id bigint, p_token bigint, p_wait_key text, p_seconds double precision, p_options jsonb) IS 'Sleep at a keyed timer: outcome elapsed at once when due, else parks the attempt without a lease or an attempt spent (waiting = true) until expire_waits requeues it. Errors: 22023, ZF001, ZF002, ZF003, ZF005, ZF012.';

-- Name: wake_parents(integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.wake_parents(p_limit integer DEFAULT 1000) RETURNS integer
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

ALTER FUNCTION pgflight.wake_parents(p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION wake_parents(p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.wake_parents(p_limit integer) IS 'Sweep: requeue parked parents whose children are all terminal; returns how many woke.';

-- Name: wake_parked_keys(integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.wake_parked_keys(p_limit integer DEFAULT 1000) RETURNS integer
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

ALTER FUNCTION pgflight.wake_parked_keys(p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION wake_parked_keys(p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.wake_parked_keys(p_limit integer) IS 'Sweep: wake parked attempts of concurrency keys that have free slots (a safety net); returns the count.';

-- Name: wake_ticket_key(bigint); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.wake_ticket_key(p_key bigint) RETURNS bigint
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_lanes bigint[] := pgflight._lane_workspaces('worker');
  v_digest bytea;
begin
  if p_key is null or v_lanes = '{}' then
    return null;
  end if;
  select sha256(s.secret || convert_to(
           coalesce((select string_agg(w::text, ',' order by w) from unnest(v_lanes) w), '*') || ':' || p_key,
           'UTF8'))
    into v_digest
    from pgflight.wake_ticket_secret s;
  -- the first 8 bytes as a signed 64-bit key
  return ('x' || encode(substring(v_digest from 1 for 8), 'hex'))::bit(64)::bigint;
end
$$;

ALTER FUNCTION pgflight.wake_ticket_key(p_key bigint) OWNER TO pgflight_owner;

-- Name: FUNCTION wake_ticket_key(p_key bigint); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.wake_ticket_key(p_key bigint) IS 'The advisory lock key (bigint) of a wake ticket for the calling login''s worker lanes, derived from the engine''s secret and p_key (the worker''s key of its recipe group and the ticket); null without a worker lane.';

-- Name: worker_list(integer); Type: FUNCTION; Schema: pgflight; Owner: pgflight_owner

CREATE FUNCTION pgflight.worker_list(p_limit integer DEFAULT 200) RETURNS TABLE(worker_id bigint, name text, hostname text, pid integer, recipes text[], started_at timestamp with time zone, last_seen_at timestamp with time zone, stopped_at timestamp with time zone, alive boolean, held jsonb)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_lanes bigint[] := pgflight._lane_workspaces('reader');  -- null: every workspace
begin
  perform pgflight._require_limit('limit', p_limit, 1000);
  return query
  with leased as (
    -- what every worker holds, read once from the leased-attempts index
    select a.worker_id, jsonb_agg(jsonb_build_object(
             'attempt_id', a.id, 'step_id', a.step_id, 'run_id', a.run_id, 'recipe', a.recipe,
             'status', a.status, 'lease_expires_at', a.lease_expires_at) order by a.id) as held
      from pgflight.step_attempts a
     where a.status in ('claimed', 'running', 'cancel_requested')
       and (v_lanes is null or exists (select from pgflight.runs r
                                        where r.id = a.run_id and r.workspace_id = any(v_lanes)))
     group by a.worker_id
  )
  select w.id, w.name, w.hostname, w.pid, w.recipes, w.started_at, w.last_seen_at, w.stopped_at,
         w.stopped_at is null and w.last_seen_at > v_now - interval '60 seconds',
         coalesce(l.held, '[]')
    from pgflight.workers w
    left join leased l on l.worker_id = w.id
   where (w.stopped_at is null or w.last_seen_at > v_now - interval '1 hour')
     and (v_lanes is null or l.worker_id is not null)
   order by w.last_seen_at desc, w.id desc
   limit p_limit;
end
$$;

ALTER FUNCTION pgflight.worker_list(p_limit integer) OWNER TO pgflight_owner;

-- Name: FUNCTION worker_list(p_limit integer); Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON FUNCTION pgflight.worker_list(p_limit integer) IS 'Read: live and recently seen workers with the attempts each holds (no fencing tokens). Errors: 22023.';

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
    payload jsonb,
    CONSTRAINT decided_at_is_set_with_decision CHECK (((decision IS NULL) = (decided_at IS NULL))),
    CONSTRAINT decision_is_known CHECK (((decision IS NULL) OR (decision = ANY (ARRAY['approve'::text, 'reject'::text])))),
    CONSTRAINT default_decision_is_known CHECK ((default_decision = ANY (ARRAY['approve'::text, 'reject'::text])))
);

ALTER TABLE pgflight.approvals OWNER TO pgflight_owner;

-- Name: TABLE approvals; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.approvals IS 'Approval gates per step and gate_key. decision: approve | reject (null while pending). expires_at: when expire_approvals applies default_decision.';

-- Name: COLUMN approvals.payload; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.approvals.payload IS 'JSON the decider handed back with the decision (approve''s p_payload), null when none; capped by settings.max_approval_request_bytes. A tool gate''s: {"arguments": {...}} or {"message": "..."}.';

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
)
WITH (fillfactor='80');

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
    CONSTRAINT amounts_are_not_negative CHECK ((LEAST(spent_usd, reserved_usd, limit_usd) >= 0.0)),
    CONSTRAINT max_wall_is_positive CHECK ((max_wall_s > '0'::double precision)),
    CONSTRAINT scope_is_known CHECK ((scope = ANY ('{run,step,workspace_day}'::text[]))),
    CONSTRAINT scope_names_its_key CHECK ((((run_id IS NOT NULL) = (scope = ANY ('{run,step}'::text[]))) AND ((day IS NULL) = (scope = ANY ('{run,step}'::text[]))) AND ((step_id IS NOT NULL) = (scope = 'step'::text))))
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

-- Name: claim_turns; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

CREATE SEQUENCE pgflight.claim_turns
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
    CYCLE;

ALTER TABLE pgflight.claim_turns OWNER TO pgflight_owner;

-- Name: SEQUENCE claim_turns; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON SEQUENCE pgflight.claim_turns IS 'The fair claim''s rotation counter (one value per claim_batch call).';

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
    lease_lost boolean DEFAULT false NOT NULL,
    unknown_outcome boolean DEFAULT false NOT NULL,
    cache_creation_1h_tokens bigint DEFAULT 0 NOT NULL,
    web_search_requests bigint DEFAULT 0 NOT NULL,
    budget_ids bigint[],
    reused boolean DEFAULT false NOT NULL,
    CONSTRAINT reused_costs_nothing CHECK (((NOT reused) OR ((usd = 0.0) AND (NOT lease_lost)))),
    CONSTRAINT server_tool_counts_are_not_negative CHECK ((LEAST(cache_creation_1h_tokens, web_search_requests) >= 0)),
    CONSTRAINT tokens_are_not_negative CHECK ((LEAST(input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens) >= 0)),
    CONSTRAINT unknown_outcome_is_lease_lost CHECK ((lease_lost OR (NOT unknown_outcome))),
    CONSTRAINT usd_is_not_negative CHECK ((usd >= 0.0))
)
PARTITION BY RANGE (agent_run_id);

ALTER TABLE pgflight.costs OWNER TO pgflight_owner;

-- Name: TABLE costs; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.costs IS 'One row per model call: tokens (input, output, cache_creation, cache_read), usd (USD = tokens x model_prices / 1e6), the stop_reason, the transient errors retried before it (retries), and which agent, step, run and workspace it is billed to. Range-partitioned by agent_run_id: a partition is dropped once every agent run in it is purged.';

-- Name: COLUMN costs.lease_lost; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.costs.lease_lost IS 'true: a model call paid for by an attempt that had lost its lease (record_orphan_cost); charged to the budgets and run_audit, not part of the transcript.';

-- Name: COLUMN costs.unknown_outcome; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.costs.unknown_outcome IS 'true: a call whose attempt ended with the request out and no answer recorded, charged at its reservation (usd; tokens unknown, 0); settled to the real figures if the answer is recorded late.';

-- Name: COLUMN costs.cache_creation_1h_tokens; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.costs.cache_creation_1h_tokens IS 'Of cache_creation_tokens, the one-hour cache writes (usage.cache_creation.ephemeral_1h_input_tokens).';

-- Name: COLUMN costs.web_search_requests; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.costs.web_search_requests IS 'Server-side web searches of the call (usage.server_tool_use.web_search_requests).';

-- Name: COLUMN costs.budget_ids; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.costs.budget_ids IS 'Of an unknown_outcome row: the budgets its reservation was charged to (a late answer settles them); null otherwise.';

-- Name: COLUMN costs.reused; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.costs.reused IS 'true: an iteration a fork took from the agent it was forked from: USD 0 and no tokens (the original''s row paid).';

-- Name: costs_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

CREATE SEQUENCE pgflight.costs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER TABLE pgflight.costs_id_seq OWNER TO pgflight_owner;

-- Name: costs_id_seq; Type: SEQUENCE OWNED BY; Schema: pgflight; Owner: pgflight_owner

ALTER SEQUENCE pgflight.costs_id_seq OWNED BY pgflight.costs.id;

-- Name: costs_default; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.costs_default (
    id bigint DEFAULT nextval('pgflight.costs_id_seq'::regclass) NOT NULL,
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
    lease_lost boolean DEFAULT false NOT NULL,
    unknown_outcome boolean DEFAULT false NOT NULL,
    cache_creation_1h_tokens bigint DEFAULT 0 NOT NULL,
    web_search_requests bigint DEFAULT 0 NOT NULL,
    budget_ids bigint[],
    reused boolean DEFAULT false NOT NULL,
    CONSTRAINT reused_costs_nothing CHECK (((NOT reused) OR ((usd = 0.0) AND (NOT lease_lost)))),
    CONSTRAINT server_tool_counts_are_not_negative CHECK ((LEAST(cache_creation_1h_tokens, web_search_requests) >= 0)),
    CONSTRAINT tokens_are_not_negative CHECK ((LEAST(input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens) >= 0)),
    CONSTRAINT unknown_outcome_is_lease_lost CHECK ((lease_lost OR (NOT unknown_outcome))),
    CONSTRAINT usd_is_not_negative CHECK ((usd >= 0.0))
);

ALTER TABLE pgflight.costs_default OWNER TO pgflight_owner;

-- Name: costs_from_0; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.costs_from_0 (
    id bigint DEFAULT nextval('pgflight.costs_id_seq'::regclass) NOT NULL,
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
    lease_lost boolean DEFAULT false NOT NULL,
    unknown_outcome boolean DEFAULT false NOT NULL,
    cache_creation_1h_tokens bigint DEFAULT 0 NOT NULL,
    web_search_requests bigint DEFAULT 0 NOT NULL,
    budget_ids bigint[],
    reused boolean DEFAULT false NOT NULL,
    CONSTRAINT reused_costs_nothing CHECK (((NOT reused) OR ((usd = 0.0) AND (NOT lease_lost)))),
    CONSTRAINT server_tool_counts_are_not_negative CHECK ((LEAST(cache_creation_1h_tokens, web_search_requests) >= 0)),
    CONSTRAINT tokens_are_not_negative CHECK ((LEAST(input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens) >= 0)),
    CONSTRAINT unknown_outcome_is_lease_lost CHECK ((lease_lost OR (NOT unknown_outcome))),
    CONSTRAINT usd_is_not_negative CHECK ((usd >= 0.0))
);

ALTER TABLE pgflight.costs_from_0 OWNER TO pgflight_owner;

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
    concurrency_key text,
    concurrency_limit integer,
    CONSTRAINT concurrency_key_has_a_limit CHECK (((concurrency_key IS NULL) = (concurrency_limit IS NULL))),
    CONSTRAINT concurrency_key_is_short CHECK (((concurrency_key IS NULL) OR (length(concurrency_key) <= 200))),
    CONSTRAINT concurrency_limit_is_positive CHECK (((concurrency_limit IS NULL) OR (concurrency_limit > 0))),
    CONSTRAINT failed_attempts_is_not_negative CHECK ((failed_attempts >= 0)),
    CONSTRAINT lease_is_positive CHECK (((lease_s IS NULL) OR (lease_s > (0)::double precision))),
    CONSTRAINT max_attempts_is_positive CHECK ((max_attempts > 0)),
    CONSTRAINT max_runtime_is_positive CHECK (((max_runtime_s IS NULL) OR (max_runtime_s > (0)::double precision))),
    CONSTRAINT root_has_depth_zero CHECK (((parent_id IS NULL) = (depth = 0)))
);

ALTER TABLE pgflight.steps OWNER TO pgflight_owner;

-- Name: TABLE steps; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.steps IS 'Step identity. failed_attempts counts attempts that ended failed, lease_expired or timed_out: at max_attempts the step is dead-lettered. children_pending counts children not yet terminal while the step waits in awaiting_children: the last child to finish wakes the parent (O(1)). lease_s / max_runtime_s (seconds) override the claim lease and bound the runtime of one attempt.';

-- Name: COLUMN steps.concurrency_key; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.steps.concurrency_key IS 'Steps of one workspace that share this key run at most concurrency_limit attempts at once (null: no key).';

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

-- Name: emitted_events; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.emitted_events (
    id bigint NOT NULL,
    workspace_id bigint NOT NULL,
    event_id text NOT NULL,
    name text NOT NULL,
    key text NOT NULL,
    payload jsonb,
    emitted_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    emitted_by text NOT NULL
);

ALTER TABLE pgflight.emitted_events OWNER TO pgflight_owner;

-- Name: TABLE emitted_events; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.emitted_events IS 'Events emitted per workspace, name and key, kept until expires_at (settings.event_retention_s after the emit). event_id: the caller''s idempotency key (generated when not given). emitted_by: the login.';

-- Name: emitted_events_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE pgflight.emitted_events ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.emitted_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: sweep_state; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.sweep_state (
    id boolean DEFAULT true NOT NULL,
    last_pass_at timestamp with time zone,
    last_partitions_at timestamp with time zone,
    reclaim_batch integer DEFAULT 1000 NOT NULL,
    CONSTRAINT one_row CHECK (id),
    CONSTRAINT reclaim_batch_is_positive CHECK ((reclaim_batch > 0))
)
WITH (fillfactor='50');

ALTER TABLE pgflight.sweep_state OWNER TO pgflight_owner;

-- Name: TABLE sweep_state; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.sweep_state IS 'The sweeps'' own state, one row: last_pass_at (end of the last run_sweeps), last_partitions_at (last maintain_partitions), reclaim_batch (the reclaim limit of the next pass, grown while a backlog lasts).';

-- Name: engine_health; Type: VIEW; Schema: pgflight; Owner: pgflight_owner

CREATE VIEW pgflight.engine_health AS
 SELECT ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.status = 'queued'::text) AND (a.available_after <= ( SELECT pgflight._now() AS _now)) AND ((l.ws IS NULL) OR (a.workspace_id = ANY (l.ws))))) AS ready,
    ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.status = ANY (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text])) AND ((l.ws IS NULL) OR (a.workspace_id = ANY (l.ws))))) AS leased,
    ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.status = ANY (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text])) AND (a.lease_expires_at < ( SELECT pgflight._now() AS _now)) AND ((l.ws IS NULL) OR (a.workspace_id = ANY (l.ws))))) AS expired_not_reclaimed,
    ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.status = ANY (ARRAY['claimed'::text, 'running'::text])) AND (a.deadline_at < ( SELECT pgflight._now() AS _now)) AND (a.lease_expires_at >= ( SELECT pgflight._now() AS _now)) AND ((l.ws IS NULL) OR (a.workspace_id = ANY (l.ws))))) AS over_deadline_heartbeating,
    ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.status = ANY (ARRAY['awaiting_children'::text, 'awaiting_approval'::text])) AND ((l.ws IS NULL) OR (a.workspace_id = ANY (l.ws))))) AS parked,
        CASE
            WHEN (l.ws IS NULL) THEN ( SELECT count(*) AS count
               FROM pgflight.workers w
              WHERE ((w.stopped_at IS NULL) AND (w.last_seen_at > (( SELECT pgflight._now() AS _now) - '00:01:00'::interval))))
            ELSE NULL::bigint
        END AS workers_alive,
    h.xmin_age AS oldest_xmin_age,
    h.held_s AS oldest_xmin_held_s,
    h.pid AS oldest_xmin_pid,
    pg_notification_queue_usage() AS notify_queue_usage,
    ( SELECT jsonb_object_agg(t.relname, t.n_dead_tup ORDER BY t.relname) AS jsonb_object_agg
           FROM pg_stat_user_tables t
          WHERE ((t.schemaname = 'pgflight'::name) AND (t.relname = ANY (ARRAY['runs'::name, 'steps'::name, 'step_attempts'::name, 'agent_runs'::name, 'workers'::name, 'flow_limits'::name, 'sweep_state'::name])))) AS dead_tuples,
    ( SELECT date_part('epoch'::text, (( SELECT pgflight._now() AS _now) - s.last_pass_at)) AS date_part
           FROM pgflight.sweep_state s) AS sweep_lag_s,
    COALESCE((h.held_s > (300)::double precision), false) AS oldest_xmin_over_5_min,
    ( SELECT age(d.datfrozenxid) AS age
           FROM pg_database d
          WHERE (d.datname = current_database())) AS datfrozenxid_age
   FROM (( SELECT pgflight._lane_workspaces('reader'::text) AS ws) l
     LEFT JOIN pgflight._vacuum_horizon() h(xmin_age, held_s, pid) ON (true));

ALTER TABLE pgflight.engine_health OWNER TO pgflight_owner;

-- Name: VIEW engine_health; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON VIEW pgflight.engine_health IS 'Gauges: ready, leased, expired leases not yet reclaimed, attempts over their deadline but still heartbeating (C15), parked (counts of the workspaces the login may read), workers seen in the last 60 s (null unless the login reads every workspace); the oldest xmin holding back vacuum (age, seconds held, pid), NOTIFY queue usage, dead tuples of the hot tables, seconds since the last sweep pass, the > 5 min flag, age(datfrozenxid).';

-- Name: engine_locks; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.engine_locks (
    scope text NOT NULL,
    holder_pid integer,
    holder_started_at timestamp with time zone,
    CONSTRAINT holder_is_named_whole CHECK (((holder_pid IS NULL) = (holder_started_at IS NULL)))
)
WITH (fillfactor='50');

ALTER TABLE pgflight.engine_locks OWNER TO pgflight_owner;

-- Name: TABLE engine_locks; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.engine_locks IS 'The engine''s locks as rows no login can lock (no lane has a privilege on it): key:<ws>:<key>, slots:<scope>, model_tokens:<ws> locked in the caller''s transaction; sweep_loop a lease held by holder_pid (with holder_started_at, its backend_start) while that backend lives.';

-- Name: event_channels; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.event_channels (
    workspace_id bigint NOT NULL,
    name text NOT NULL,
    key text NOT NULL,
    touched_at timestamp with time zone NOT NULL
);

ALTER TABLE pgflight.event_channels OWNER TO pgflight_owner;

-- Name: TABLE event_channels; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.event_channels IS 'Lock rows: one per workspace, event name and key; wait_event and emit_event lock it first, so no wake-up is lost.';

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
)
PARTITION BY RANGE (at);

ALTER TABLE pgflight.events OWNER TO pgflight_owner;

-- Name: TABLE events; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.events IS 'Append-only log of transitions, partitioned by day on at (retention drops whole days, settings.events_keep_s). reason names the event: queued, claimed, started, succeeded, failed, retry_scheduled, lease_expired, deadline_exceeded, dead_lettered, released, cancel_requested, cancelled, children_spawned, parent_resumed, approval_requested, approval_decided, stale_result_rejected, retried, replayed, budget_exceeded.';

-- Name: events_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

CREATE SEQUENCE pgflight.events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER TABLE pgflight.events_id_seq OWNER TO pgflight_owner;

-- Name: events_id_seq; Type: SEQUENCE OWNED BY; Schema: pgflight; Owner: pgflight_owner

ALTER SEQUENCE pgflight.events_id_seq OWNED BY pgflight.events.id;

-- Name: events_default; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.events_default (
    id bigint DEFAULT nextval('pgflight.events_id_seq'::regclass) NOT NULL,
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

ALTER TABLE pgflight.events_default OWNER TO pgflight_owner;

-- Name: fan_in_stripes; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.fan_in_stripes (
    parent_id bigint NOT NULL,
    stripe smallint NOT NULL,
    pending integer NOT NULL,
    allotted integer NOT NULL,
    CONSTRAINT pending_is_not_negative CHECK ((pending >= 0)),
    CONSTRAINT pending_within_allotted CHECK ((pending <= allotted))
)
WITH (fillfactor='50');

ALTER TABLE pgflight.fan_in_stripes OWNER TO pgflight_owner;

-- Name: TABLE fan_in_stripes; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.fan_in_stripes IS 'Striped fan-in counter: pending children of parent_id counted on this stripe (of allotted at spawn). The parent''s steps.children_pending counts the allotment of each stripe not yet dry, plus the children counted on no stripe; it reaches zero when the last child ends.';

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

-- Name: flow_slot_returns; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.flow_slot_returns (
    id bigint NOT NULL,
    scope bigint NOT NULL,
    n integer DEFAULT 1 NOT NULL
);

ALTER TABLE pgflight.flow_slot_returns OWNER TO pgflight_owner;

-- Name: TABLE flow_slot_returns; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.flow_slot_returns IS 'Slots given back by attempts that left the leased set, not yet folded into a stripe by a claim.';

-- Name: flow_slot_returns_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE pgflight.flow_slot_returns ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.flow_slot_returns_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: flow_slots; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.flow_slots (
    scope bigint NOT NULL,
    stripe smallint NOT NULL,
    cap integer NOT NULL,
    held integer DEFAULT 0 NOT NULL,
    CONSTRAINT cap_is_not_negative CHECK ((cap >= 0))
)
WITH (fillfactor='20');

ALTER TABLE pgflight.flow_slots OWNER TO pgflight_owner;

-- Name: TABLE flow_slots; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.flow_slots IS 'In-flight caps split into stripes: a claim takes at most cap - held from the stripes it can lock without waiting. scope: workspace id, 0 for the global cap. Reconciled by wake_parked_keys.';

-- Name: model_token_windows; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.model_token_windows (
    workspace_id bigint NOT NULL,
    bucket timestamp with time zone NOT NULL,
    tokens bigint DEFAULT 0 NOT NULL
)
WITH (fillfactor='70');

ALTER TABLE pgflight.model_token_windows OWNER TO pgflight_owner;

-- Name: TABLE model_token_windows; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.model_token_windows IS 'Model tokens (input + output) of a workspace per 5-second bucket (bucket: its start): the rolling minute that admission checks against workspace_limits.model_tokens_per_min. Estimates of admitted calls are added at admission and replaced by the actual tokens when the call is recorded.';

-- Name: recipe_limits; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.recipe_limits (
    recipe text NOT NULL,
    starts_per_s double precision,
    burst double precision,
    tokens double precision,
    refilled_at timestamp with time zone,
    paused_at timestamp with time zone,
    paused_by text,
    updated_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT burst_is_at_least_one CHECK (((burst IS NULL) OR ((burst >= (1)::double precision) AND (burst <= ('1000000'::numeric)::double precision)))),
    CONSTRAINT paused_has_actor CHECK (((paused_at IS NULL) = (paused_by IS NULL))),
    CONSTRAINT rate_has_burst CHECK (((starts_per_s IS NULL) = (burst IS NULL))),
    CONSTRAINT rate_is_positive CHECK (((starts_per_s IS NULL) OR ((starts_per_s > (0)::double precision) AND (starts_per_s <= ('1000000'::numeric)::double precision)))),
    CONSTRAINT recipe_is_not_blank CHECK (((btrim(recipe) <> ''::text) AND (length(recipe) <= 200)))
);

ALTER TABLE pgflight.recipe_limits OWNER TO pgflight_owner;

-- Name: TABLE recipe_limits; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.recipe_limits IS 'Flow control of a recipe across all workspaces: starts_per_s and burst (token bucket), paused_at/paused_by.';

-- Name: run_events; Type: VIEW; Schema: pgflight; Owner: pgflight_owner

CREATE VIEW pgflight.run_events WITH (security_barrier='true') AS
 SELECT l.id,
    l.at,
    l.run_id,
    l.step_id,
    l.attempt_id,
    l.from_status,
    l.to_status,
    l.worker_id,
    l.actor,
    l.reason,
    l.detail
   FROM ( SELECT e.id,
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
        UNION ALL
         SELECT d.id,
            d.at,
            s.run_id,
            s.id,
            a.id,
            d.from_status,
            d.to_status,
                CASE
                    WHEN (d.to_status <> 'queued'::text) THEN a.worker_id
                    ELSE NULL::bigint
                END AS "case",
                CASE d.reason
                    WHEN 'queued'::text THEN ( SELECT r.submitted_by
                       FROM pgflight.runs r
                      WHERE (r.id = s.run_id))
                    WHEN 'retry_scheduled'::text THEN 'reclaim'::text
                    ELSE NULL::text
                END AS "case",
            d.reason,
                CASE
                    WHEN (d.reason = 'retry_scheduled'::text) THEN jsonb_build_object('delay_s', round((a.queue_delay_s)::numeric, 3), 'attempt_no', a.attempt_no)
                    ELSE NULL::jsonb
                END AS "case"
           FROM ((pgflight.steps s
             JOIN pgflight.step_attempts a ON ((a.step_id = s.id)))
             CROSS JOIN LATERAL ( VALUES (a.queue_event_id,a.created_at,NULL::text,'queued'::text,
                        CASE
                            WHEN (a.queue_delay_s IS NULL) THEN 'queued'::text
                            ELSE 'retry_scheduled'::text
                        END), (a.claim_event_id,a.claimed_at,'queued'::text,'running'::text,'claimed'::text), (a.finish_event_id,a.finished_at,'running'::text,'succeeded'::text,'succeeded'::text)) d(id, at, from_status, to_status, reason))
          WHERE (d.id IS NOT NULL)) l
  WHERE ((( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces) IS NULL) OR (EXISTS ( SELECT
           FROM pgflight.runs r
          WHERE ((r.id = l.run_id) AND (r.workspace_id = ANY (COALESCE(( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces), '{}'::bigint[])))))));

ALTER TABLE pgflight.run_events OWNER TO pgflight_owner;

-- Name: VIEW run_events; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON VIEW pgflight.run_events IS 'The transition log: the events rows, and the submits, reclaim retries, started claims and successes the attempts record.';

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

-- Name: schedule_fires; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.schedule_fires (
    schedule_id bigint NOT NULL,
    fire_at timestamp with time zone NOT NULL,
    fired_at timestamp with time zone NOT NULL,
    outcome text NOT NULL,
    run_id bigint,
    missed_until timestamp with time zone,
    error jsonb,
    CONSTRAINT outcome_is_known CHECK ((outcome = ANY (ARRAY['submitted'::text, 'skipped'::text, 'queued'::text, 'failed'::text])))
);

ALTER TABLE pgflight.schedule_fires OWNER TO pgflight_owner;

-- Name: TABLE schedule_fires; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.schedule_fires IS 'One row per firing of a schedule, keyed by (schedule, fire time): a firing is decided once. outcome: submitted (run_id), skipped (overlap skip), queued (overlap queue_one: submitted later, when the previous run ends; the row is then updated to submitted), failed (submit_run refused: error says why; the schedule goes on). missed_until: the firing stands for every firing missed up to this instant (catch-up after downtime).';

-- Name: schedules; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.schedules (
    id bigint NOT NULL,
    workspace_id bigint NOT NULL,
    name text NOT NULL,
    cron text NOT NULL,
    time_zone text DEFAULT 'UTC'::text NOT NULL,
    recipe text NOT NULL,
    input jsonb DEFAULT '{}'::jsonb NOT NULL,
    run_options jsonb DEFAULT '{}'::jsonb NOT NULL,
    overlap text DEFAULT 'skip'::text NOT NULL,
    seconds integer[] NOT NULL,
    minutes integer[] NOT NULL,
    hours integer[] NOT NULL,
    days integer[] NOT NULL,
    months integer[] NOT NULL,
    weekdays integer[] NOT NULL,
    any_day boolean NOT NULL,
    any_weekday boolean NOT NULL,
    next_fire_at timestamp with time zone,
    pending_fire_at timestamp with time zone,
    last_fire_at timestamp with time zone,
    last_run_id bigint,
    created_by text NOT NULL,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    updated_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT name_is_not_blank CHECK (((btrim(name) <> ''::text) AND (length(name) <= 200))),
    CONSTRAINT overlap_is_known CHECK ((overlap = ANY (ARRAY['skip'::text, 'queue_one'::text, 'allow'::text]))),
    CONSTRAINT recipe_is_not_blank CHECK (((btrim(recipe) <> ''::text) AND (length(recipe) <= 200)))
);

ALTER TABLE pgflight.schedules OWNER TO pgflight_owner;

-- Name: TABLE schedules; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.schedules IS 'Recurring runs. cron (5 or 6 fields, seconds first) read on the wall clock of time_zone; overlap: skip (a firing while the previous run is still running is skipped), queue_one (it waits, at most one, and runs when the previous run ends), allow (runs at once). seconds..weekdays, any_day, any_weekday: the parsed expression. next_fire_at: the next firing; pending_fire_at: a queue_one firing waiting for last_run_id to end.';

-- Name: schedule_list; Type: VIEW; Schema: pgflight; Owner: pgflight_owner

CREATE VIEW pgflight.schedule_list WITH (security_barrier='true') AS
 SELECT w.name AS workspace,
    s.name,
    s.cron,
    s.time_zone,
    s.recipe,
    s.overlap,
    s.next_fire_at,
    s.last_fire_at,
    s.last_run_id,
    s.pending_fire_at,
    s.created_by,
    s.created_at
   FROM (pgflight.schedules s
     JOIN pgflight.workspaces w ON ((w.id = s.workspace_id)))
  WHERE ((( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces) IS NULL) OR (s.workspace_id = ANY (COALESCE(( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces), '{}'::bigint[]))));

ALTER TABLE pgflight.schedule_list OWNER TO pgflight_owner;

-- Name: VIEW schedule_list; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON VIEW pgflight.schedule_list IS 'Schedules with their next and last firing.';

-- Name: schedules_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE pgflight.schedules ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.schedules_id_seq
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
    max_in_flight integer,
    max_runs_per_call integer DEFAULT 100000 NOT NULL,
    events_keep_s double precision DEFAULT 604800 NOT NULL,
    partitions_ahead_days integer DEFAULT 3 NOT NULL,
    agent_runs_per_partition bigint DEFAULT 100000 NOT NULL,
    max_lease_s_capped double precision DEFAULT 900 NOT NULL,
    max_schedules_per_workspace integer DEFAULT 100 NOT NULL,
    min_schedule_interval_s double precision DEFAULT 60 NOT NULL,
    max_trace_blocks_per_iteration integer DEFAULT 1000 NOT NULL,
    workers_keep_s double precision DEFAULT 604800 NOT NULL,
    max_json_depth integer DEFAULT 64 NOT NULL,
    event_retention_s double precision DEFAULT 604800 NOT NULL,
    max_event_payload_bytes bigint DEFAULT 1048576 NOT NULL,
    max_stream_chunk_bytes integer DEFAULT 65536 NOT NULL,
    max_stream_chunks_per_call integer DEFAULT 1000 NOT NULL,
    max_stream_bytes bigint DEFAULT 16777216 NOT NULL,
    runs_per_stream_partition bigint DEFAULT 100000 NOT NULL,
    CONSTRAINT agent_runs_per_partition_in_range CHECK (((agent_runs_per_partition >= 1000) AND (agent_runs_per_partition <= 1000000000))),
    CONSTRAINT caps_are_positive CHECK (((max_result_bytes > 0) AND (max_error_bytes > 0) AND (max_receipt_bytes > 0) AND (max_approval_request_bytes > 0) AND (max_name_bytes > 0) AND (max_children_per_call > 0) AND (max_children_per_parent > 0) AND (max_batch_size > 0) AND (max_lease_s > (0)::double precision) AND (max_live_workers_per_login > 0) AND (max_stale_writes_per_attempt > 0))),
    CONSTRAINT default_lease_is_positive CHECK ((default_lease_s > (0)::double precision)),
    CONSTRAINT default_max_attempts_is_positive CHECK ((default_max_attempts > 0)),
    CONSTRAINT event_retention_is_positive CHECK ((event_retention_s > (0)::double precision)),
    CONSTRAINT events_keep_is_positive CHECK ((events_keep_s > (0)::double precision)),
    CONSTRAINT max_event_payload_bytes_is_positive CHECK ((max_event_payload_bytes > 0)),
    CONSTRAINT max_in_flight_is_not_negative CHECK (((max_in_flight IS NULL) OR (max_in_flight >= 0))),
    CONSTRAINT max_input_bytes_is_positive CHECK ((max_input_bytes > 0)),
    CONSTRAINT max_json_depth_is_positive CHECK ((max_json_depth > 0)),
    CONSTRAINT max_runs_per_call_is_positive CHECK ((max_runs_per_call > 0)),
    CONSTRAINT max_trace_blocks_per_iteration_fits_its_band CHECK ((max_trace_blocks_per_iteration <= 1000)),
    CONSTRAINT partitions_ahead_in_range CHECK (((partitions_ahead_days >= 1) AND (partitions_ahead_days <= 90))),
    CONSTRAINT reclaim_in_claim_is_not_negative CHECK ((reclaim_in_claim >= 0)),
    CONSTRAINT runs_per_stream_partition_in_range CHECK (((runs_per_stream_partition >= 1000) AND (runs_per_stream_partition <= 1000000000))),
    CONSTRAINT settings_has_one_row CHECK (singleton),
    CONSTRAINT stream_caps_are_positive CHECK (((max_stream_chunk_bytes > 0) AND (max_stream_chunks_per_call > 0) AND (max_stream_bytes > 0))),
    CONSTRAINT tenant_caps_are_positive CHECK (((max_lease_s_capped > (0)::double precision) AND (max_schedules_per_workspace > 0) AND (min_schedule_interval_s > (0)::double precision) AND (max_trace_blocks_per_iteration > 0) AND (workers_keep_s > (0)::double precision)))
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

-- Name: COLUMN settings.max_in_flight; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_in_flight IS 'Global cap on leased attempts across all workspaces (null: none). While set, claims take turns.';

-- Name: COLUMN settings.max_runs_per_call; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_runs_per_call IS 'Cap of runs in one submit_runs call.';

-- Name: COLUMN settings.events_keep_s; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.events_keep_s IS 'Retention of the transition log (pgflight.events), seconds: a day partition is dropped once its end is older than this. Default 7 days. Independent of purge_after_s (finished runs).';

-- Name: COLUMN settings.partitions_ahead_days; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.partitions_ahead_days IS 'How many days of events partitions maintain_partitions keeps created ahead of today (1..90, default 3).';

-- Name: COLUMN settings.agent_runs_per_partition; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.agent_runs_per_partition IS 'Width of a traces/costs partition in agent run ids (1,000..1,000,000,000, default 100,000): about a day of agent runs. A partition is dropped when every agent run in it is purged (purge_after_s), so a wider one keeps the traces of purged runs longer, a narrower one makes more partitions. Applies to partitions created from then on.';

-- Name: COLUMN settings.max_lease_s_capped; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_lease_s_capped IS 'Ceiling (seconds) of a lease counted against an in-flight cap (settings.max_in_flight or a workspace''s): a claim''s requested lease is clamped to it, so one claim cannot hold a capped slot longer.';

-- Name: COLUMN settings.max_schedules_per_workspace; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_schedules_per_workspace IS 'Cap of schedules of one workspace.';

-- Name: COLUMN settings.min_schedule_interval_s; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.min_schedule_interval_s IS 'Shortest gap (seconds) between two firings a schedule''s cron expression may allow.';

-- Name: COLUMN settings.max_trace_blocks_per_iteration; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_trace_blocks_per_iteration IS 'Cap of trace blocks of one agent run iteration (record_trace, record_model_call); 1 .. 1000, the seq band of a model response (0 .. 999; tool results from 1000).';

-- Name: COLUMN settings.workers_keep_s; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.workers_keep_s IS 'How long (seconds) a stopped worker''s row is kept before the retention sweep (maintain_partitions) deletes it.';

-- Name: COLUMN settings.max_json_depth; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_json_depth IS 'Cap of how deep arrays and objects nest in a JSON value the API accepts (a scalar is 0, [1] is 1, {"a": [1]} is 2).';

-- Name: COLUMN settings.event_retention_s; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.event_retention_s IS 'Seconds an emitted event is kept (default 7 days): a wait for its name and key that starts within it receives it at once; expire_waits deletes it afterwards. Also how long its event id stays idempotent.';

-- Name: COLUMN settings.max_event_payload_bytes; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_event_payload_bytes IS 'Cap (bytes of JSON text) of emit_event''s payload and of wait_event''s default payload.';

-- Name: COLUMN settings.max_stream_chunk_bytes; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_stream_chunk_bytes IS 'Cap (bytes, UTF-8) of one chunk of stream_write (default 65,536).';

-- Name: COLUMN settings.max_stream_chunks_per_call; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_stream_chunks_per_call IS 'Cap of the chunks one stream_write call carries (default 1,000).';

-- Name: COLUMN settings.max_stream_bytes; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.max_stream_bytes IS 'Cap (bytes) of everything written to one stream (a run''s channel), all attempts together (default 16 MiB).';

-- Name: COLUMN settings.runs_per_stream_partition; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON COLUMN pgflight.settings.runs_per_stream_partition IS 'Width of a streams/stream_chunks partition in run ids (1,000..1,000,000,000, default 100,000). A partition is dropped when every run in it is purged (purge_after_s). Applies to partitions created from then on.';

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

-- Name: stream_chunks; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.stream_chunks (
    run_id bigint NOT NULL,
    channel text NOT NULL,
    seq bigint NOT NULL,
    attempt_id bigint NOT NULL,
    attempt_no integer NOT NULL,
    step_id bigint NOT NULL,
    chunk text NOT NULL,
    written_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT stream_seq_is_positive CHECK ((seq >= 1))
)
PARTITION BY RANGE (run_id);

ALTER TABLE pgflight.stream_chunks OWNER TO pgflight_owner;

-- Name: TABLE stream_chunks; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.stream_chunks IS 'One row per chunk of a stream: seq (1, 2, ... per run and channel, in write order), the attempt that wrote it (attempt_id, attempt_no: its number within its step), its step, the text, written_at (the time of its stream_write call: one per batch). Range-partitioned by run_id.';

-- Name: stream_chunks_default; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.stream_chunks_default (
    run_id bigint NOT NULL,
    channel text NOT NULL,
    seq bigint NOT NULL,
    attempt_id bigint NOT NULL,
    attempt_no integer NOT NULL,
    step_id bigint NOT NULL,
    chunk text NOT NULL,
    written_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT stream_seq_is_positive CHECK ((seq >= 1))
);

ALTER TABLE pgflight.stream_chunks_default OWNER TO pgflight_owner;

-- Name: stream_chunks_from_0; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.stream_chunks_from_0 (
    run_id bigint NOT NULL,
    channel text NOT NULL,
    seq bigint NOT NULL,
    attempt_id bigint NOT NULL,
    attempt_no integer NOT NULL,
    step_id bigint NOT NULL,
    chunk text NOT NULL,
    written_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT stream_seq_is_positive CHECK ((seq >= 1))
);

ALTER TABLE pgflight.stream_chunks_from_0 OWNER TO pgflight_owner;

-- Name: streams; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.streams (
    run_id bigint NOT NULL,
    channel text NOT NULL,
    workspace_id bigint NOT NULL,
    last_seq bigint DEFAULT 0 NOT NULL,
    total_bytes bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    updated_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT stream_counts_are_not_negative CHECK (((last_seq >= 0) AND (total_bytes >= 0)))
)
PARTITION BY RANGE (run_id);

ALTER TABLE pgflight.streams OWNER TO pgflight_owner;

-- Name: TABLE streams; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.streams IS 'One row per stream (a run''s named channel): last_seq (the last chunk''s number, 0 before any), total_bytes (UTF-8 bytes of every chunk written, capped by settings.max_stream_bytes). Range-partitioned by run_id.';

-- Name: streams_default; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.streams_default (
    run_id bigint NOT NULL,
    channel text NOT NULL,
    workspace_id bigint NOT NULL,
    last_seq bigint DEFAULT 0 NOT NULL,
    total_bytes bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    updated_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT stream_counts_are_not_negative CHECK (((last_seq >= 0) AND (total_bytes >= 0)))
);

ALTER TABLE pgflight.streams_default OWNER TO pgflight_owner;

-- Name: streams_from_0; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.streams_from_0 (
    run_id bigint NOT NULL,
    channel text NOT NULL,
    workspace_id bigint NOT NULL,
    last_seq bigint DEFAULT 0 NOT NULL,
    total_bytes bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    updated_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT stream_counts_are_not_negative CHECK (((last_seq >= 0) AND (total_bytes >= 0)))
);

ALTER TABLE pgflight.streams_from_0 OWNER TO pgflight_owner;

-- Name: tool_policies; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.tool_policies (
    workspace_id bigint NOT NULL,
    tool_name text NOT NULL,
    action text NOT NULL,
    condition jsonpath,
    over_usd numeric(16,8),
    updated_at timestamp with time zone NOT NULL,
    updated_by text NOT NULL,
    CONSTRAINT action_is_known CHECK ((action = ANY (ARRAY['allow'::text, 'deny'::text, 'require_approval'::text]))),
    CONSTRAINT over_usd_is_not_negative CHECK (((over_usd IS NULL) OR (over_usd >= (0)::numeric)))
);

ALTER TABLE pgflight.tool_policies OWNER TO pgflight_owner;

-- Name: TABLE tool_policies; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.tool_policies IS 'Per workspace and tool name (''*'': every tool without its own row): action allow | deny | require_approval, applied by mark_tool_call when condition (a JSON path on the arguments) matches and the agent run has spent at least over_usd (USD); else the call is allowed. Written by set_tool_policy / drop_tool_policy (operator lane), read by tool_policies().';

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
    CONSTRAINT block_type_is_a_name CHECK ((block_type ~ '^[a-z][a-z0-9_]{0,63}$'::text)),
    CONSTRAINT iteration_is_not_negative CHECK ((LEAST(iteration, seq) >= 0)),
    CONSTRAINT role_is_known CHECK ((role = ANY ('{user,assistant,system}'::text[]))),
    CONSTRAINT status_is_known CHECK ((status = ANY ('{completed,in_flight,interrupted}'::text[]))),
    CONSTRAINT tool_blocks_name_their_call CHECK (((block_type <> ALL ('{tool_use,tool_result}'::text[])) OR (tool_use_id IS NOT NULL)))
)
PARTITION BY RANGE (agent_run_id);

ALTER TABLE pgflight.traces OWNER TO pgflight_owner;

-- Name: TABLE traces; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.traces IS 'Flight recorder, one row per block: role user|assistant|system, block_type thinking|text|tool_use|tool_result|api_error, content: the block as sent to or received from the Messages API, status completed|in_flight|interrupted (tool results), tokens: estimated tokens of the block (exact usage per call is in pgflight.costs), attempt_id: the attempt that wrote it. Range-partitioned by agent_run_id: a partition is dropped once every agent run in it is purged.';

-- Name: traces_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

CREATE SEQUENCE pgflight.traces_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER TABLE pgflight.traces_id_seq OWNER TO pgflight_owner;

-- Name: traces_id_seq; Type: SEQUENCE OWNED BY; Schema: pgflight; Owner: pgflight_owner

ALTER SEQUENCE pgflight.traces_id_seq OWNED BY pgflight.traces.id;

-- Name: traces_default; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.traces_default (
    id bigint DEFAULT nextval('pgflight.traces_id_seq'::regclass) NOT NULL,
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
    CONSTRAINT block_type_is_a_name CHECK ((block_type ~ '^[a-z][a-z0-9_]{0,63}$'::text)),
    CONSTRAINT iteration_is_not_negative CHECK ((LEAST(iteration, seq) >= 0)),
    CONSTRAINT role_is_known CHECK ((role = ANY ('{user,assistant,system}'::text[]))),
    CONSTRAINT status_is_known CHECK ((status = ANY ('{completed,in_flight,interrupted}'::text[]))),
    CONSTRAINT tool_blocks_name_their_call CHECK (((block_type <> ALL ('{tool_use,tool_result}'::text[])) OR (tool_use_id IS NOT NULL)))
);

ALTER TABLE pgflight.traces_default OWNER TO pgflight_owner;

-- Name: traces_from_0; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.traces_from_0 (
    id bigint DEFAULT nextval('pgflight.traces_id_seq'::regclass) NOT NULL,
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
    CONSTRAINT block_type_is_a_name CHECK ((block_type ~ '^[a-z][a-z0-9_]{0,63}$'::text)),
    CONSTRAINT iteration_is_not_negative CHECK ((LEAST(iteration, seq) >= 0)),
    CONSTRAINT role_is_known CHECK ((role = ANY ('{user,assistant,system}'::text[]))),
    CONSTRAINT status_is_known CHECK ((status = ANY ('{completed,in_flight,interrupted}'::text[]))),
    CONSTRAINT tool_blocks_name_their_call CHECK (((block_type <> ALL ('{tool_use,tool_result}'::text[])) OR (tool_use_id IS NOT NULL)))
);

ALTER TABLE pgflight.traces_from_0 OWNER TO pgflight_owner;

-- Name: waits_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE pgflight.waits ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.waits_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: wake_ticket_secret; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.wake_ticket_secret (
    id boolean DEFAULT true NOT NULL,
    secret bytea DEFAULT sha256(convert_to(((gen_random_uuid())::text || (gen_random_uuid())::text), 'UTF8'::name)) NOT NULL,
    CONSTRAINT one_row CHECK (id)
);

ALTER TABLE pgflight.wake_ticket_secret OWNER TO pgflight_owner;

-- Name: TABLE wake_ticket_secret; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.wake_ticket_secret IS 'One row: the random secret (32 bytes) wake_ticket_key mixes into every wake ticket''s lock key.';

-- Name: workers_id_seq; Type: SEQUENCE; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE pgflight.workers ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.workers_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: workspace_limits; Type: TABLE; Schema: pgflight; Owner: pgflight_owner

CREATE TABLE pgflight.workspace_limits (
    workspace_id bigint NOT NULL,
    max_in_flight integer,
    share integer DEFAULT 1 NOT NULL,
    starts_per_s double precision,
    burst double precision,
    tokens double precision,
    refilled_at timestamp with time zone,
    model_tokens_per_min bigint,
    paused_at timestamp with time zone,
    paused_by text,
    updated_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT burst_is_at_least_one CHECK (((burst IS NULL) OR ((burst >= (1)::double precision) AND (burst <= ('1000000'::numeric)::double precision)))),
    CONSTRAINT max_in_flight_is_not_negative CHECK (((max_in_flight IS NULL) OR (max_in_flight >= 0))),
    CONSTRAINT model_tokens_per_min_is_positive CHECK (((model_tokens_per_min IS NULL) OR (model_tokens_per_min > 0))),
    CONSTRAINT paused_has_actor CHECK (((paused_at IS NULL) = (paused_by IS NULL))),
    CONSTRAINT rate_has_burst CHECK (((starts_per_s IS NULL) = (burst IS NULL))),
    CONSTRAINT rate_is_positive CHECK (((starts_per_s IS NULL) OR ((starts_per_s > (0)::double precision) AND (starts_per_s <= ('1000000'::numeric)::double precision)))),
    CONSTRAINT share_is_positive CHECK (((share >= 1) AND (share <= 1000)))
);

ALTER TABLE pgflight.workspace_limits OWNER TO pgflight_owner;

-- Name: TABLE workspace_limits; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON TABLE pgflight.workspace_limits IS 'Flow control of a workspace. max_in_flight: leased attempts at once (null: no cap); share: weight in the fair claim (default 1); starts_per_s and burst: claim rate (token bucket, tokens/refilled_at its state); model_tokens_per_min: model tokens (input + output) per rolling minute, checked before each model call; paused_at/paused_by: not claimed while set.';

-- Name: workspace_flow; Type: VIEW; Schema: pgflight; Owner: pgflight_owner

CREATE VIEW pgflight.workspace_flow WITH (security_barrier='true') AS
 SELECT w.name AS workspace,
    l.max_in_flight,
    COALESCE(l.share, 1) AS share,
    l.starts_per_s,
    l.burst,
    l.model_tokens_per_min,
    l.paused_at,
    l.paused_by,
    ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.workspace_id = w.id) AND (a.status = ANY (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text])))) AS in_flight,
    ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.workspace_id = w.id) AND (a.status = 'queued'::text))) AS queued,
    ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.workspace_id = w.id) AND (a.status = 'queued'::text) AND (a.available_after = 'infinity'::timestamp with time zone))) AS parked
   FROM (pgflight.workspaces w
     LEFT JOIN pgflight.workspace_limits l ON ((l.workspace_id = w.id)))
  WHERE ((( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces) IS NULL) OR (w.id = ANY (COALESCE(( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces), '{}'::bigint[]))));

ALTER TABLE pgflight.workspace_flow OWNER TO pgflight_owner;

-- Name: VIEW workspace_flow; Type: COMMENT; Schema: pgflight; Owner: pgflight_owner

COMMENT ON VIEW pgflight.workspace_flow IS 'Per workspace: max_in_flight, share, starts_per_s/burst, model_tokens_per_min, pause; in_flight (leased attempts), queued, parked (queued behind a full concurrency key).';

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

-- Name: costs_default; Type: TABLE ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.costs ATTACH PARTITION pgflight.costs_default DEFAULT;

-- Name: costs_from_0; Type: TABLE ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.costs ATTACH PARTITION pgflight.costs_from_0 FOR VALUES FROM ('0') TO ('100000');

-- Name: events_default; Type: TABLE ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.events ATTACH PARTITION pgflight.events_default DEFAULT;

-- Name: stream_chunks_default; Type: TABLE ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.stream_chunks ATTACH PARTITION pgflight.stream_chunks_default DEFAULT;

-- Name: stream_chunks_from_0; Type: TABLE ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.stream_chunks ATTACH PARTITION pgflight.stream_chunks_from_0 FOR VALUES FROM ('0') TO ('100000');

-- Name: streams_default; Type: TABLE ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.streams ATTACH PARTITION pgflight.streams_default DEFAULT;

-- Name: streams_from_0; Type: TABLE ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.streams ATTACH PARTITION pgflight.streams_from_0 FOR VALUES FROM ('0') TO ('100000');

-- Name: traces_default; Type: TABLE ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.traces ATTACH PARTITION pgflight.traces_default DEFAULT;

-- Name: traces_from_0; Type: TABLE ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.traces ATTACH PARTITION pgflight.traces_from_0 FOR VALUES FROM ('0') TO ('100000');

-- Name: costs id; Type: DEFAULT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.costs ALTER COLUMN id SET DEFAULT nextval('pgflight.costs_id_seq'::regclass);

-- Name: events id; Type: DEFAULT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.events ALTER COLUMN id SET DEFAULT nextval('pgflight.events_id_seq'::regclass);

-- Name: traces id; Type: DEFAULT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.traces ALTER COLUMN id SET DEFAULT nextval('pgflight.traces_id_seq'::regclass);

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

-- Name: costs costs_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.costs
    ADD CONSTRAINT costs_pkey PRIMARY KEY (id, agent_run_id);

-- Name: costs_default costs_default_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.costs_default
    ADD CONSTRAINT costs_default_pkey PRIMARY KEY (id, agent_run_id);

-- Name: costs_from_0 costs_from_0_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.costs_from_0
    ADD CONSTRAINT costs_from_0_pkey PRIMARY KEY (id, agent_run_id);

-- Name: effects effect_key_is_unique_per_step; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.effects
    ADD CONSTRAINT effect_key_is_unique_per_step UNIQUE (step_id, effect_key);

-- Name: effects effects_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.effects
    ADD CONSTRAINT effects_pkey PRIMARY KEY (id);

-- Name: emitted_events emitted_event_id_is_unique_per_workspace; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.emitted_events
    ADD CONSTRAINT emitted_event_id_is_unique_per_workspace UNIQUE (workspace_id, event_id);

-- Name: emitted_events emitted_events_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.emitted_events
    ADD CONSTRAINT emitted_events_pkey PRIMARY KEY (id);

-- Name: engine_locks engine_locks_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.engine_locks
    ADD CONSTRAINT engine_locks_pkey PRIMARY KEY (scope);

-- Name: event_channels event_channels_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.event_channels
    ADD CONSTRAINT event_channels_pkey PRIMARY KEY (workspace_id, name, key);

-- Name: events events_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.events
    ADD CONSTRAINT events_pkey PRIMARY KEY (id, at);

-- Name: events_default events_default_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.events_default
    ADD CONSTRAINT events_default_pkey PRIMARY KEY (id, at);

-- Name: fan_in_stripes fan_in_stripes_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.fan_in_stripes
    ADD CONSTRAINT fan_in_stripes_pkey PRIMARY KEY (parent_id, stripe);

-- Name: flow_slot_returns flow_slot_returns_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.flow_slot_returns
    ADD CONSTRAINT flow_slot_returns_pkey PRIMARY KEY (id);

-- Name: flow_slots flow_slots_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.flow_slots
    ADD CONSTRAINT flow_slots_pkey PRIMARY KEY (scope, stripe);

-- Name: approvals gate_key_is_unique_per_step; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.approvals
    ADD CONSTRAINT gate_key_is_unique_per_step UNIQUE (step_id, gate_key);

-- Name: model_prices model_prices_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.model_prices
    ADD CONSTRAINT model_prices_pkey PRIMARY KEY (model);

-- Name: model_token_windows model_token_window_is_unique; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.model_token_windows
    ADD CONSTRAINT model_token_window_is_unique PRIMARY KEY (workspace_id, bucket);

-- Name: workspace_grants one_grant_per_login_lane_workspace; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.workspace_grants
    ADD CONSTRAINT one_grant_per_login_lane_workspace UNIQUE NULLS NOT DISTINCT (login, lane, workspace_id);

-- Name: recipe_limits recipe_limits_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.recipe_limits
    ADD CONSTRAINT recipe_limits_pkey PRIMARY KEY (recipe);

-- Name: runs runs_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (id);

-- Name: schedule_fires schedule_fires_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.schedule_fires
    ADD CONSTRAINT schedule_fires_pkey PRIMARY KEY (schedule_id, fire_at);

-- Name: schedules schedule_name_is_unique_per_workspace; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.schedules
    ADD CONSTRAINT schedule_name_is_unique_per_workspace UNIQUE (workspace_id, name);

-- Name: schedules schedules_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.schedules
    ADD CONSTRAINT schedules_pkey PRIMARY KEY (id);

-- Name: settings settings_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.settings
    ADD CONSTRAINT settings_pkey PRIMARY KEY (singleton);

-- Name: step_attempts step_attempts_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.step_attempts
    ADD CONSTRAINT step_attempts_pkey PRIMARY KEY (id);

-- Name: steps steps_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.steps
    ADD CONSTRAINT steps_pkey PRIMARY KEY (id);

-- Name: stream_chunks stream_chunk_is_unique; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.stream_chunks
    ADD CONSTRAINT stream_chunk_is_unique PRIMARY KEY (run_id, channel, seq);

-- Name: stream_chunks_default stream_chunks_default_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.stream_chunks_default
    ADD CONSTRAINT stream_chunks_default_pkey PRIMARY KEY (run_id, channel, seq);

-- Name: stream_chunks_from_0 stream_chunks_from_0_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.stream_chunks_from_0
    ADD CONSTRAINT stream_chunks_from_0_pkey PRIMARY KEY (run_id, channel, seq);

-- Name: streams stream_is_unique; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.streams
    ADD CONSTRAINT stream_is_unique PRIMARY KEY (run_id, channel);

-- Name: streams_default streams_default_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.streams_default
    ADD CONSTRAINT streams_default_pkey PRIMARY KEY (run_id, channel);

-- Name: streams_from_0 streams_from_0_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.streams_from_0
    ADD CONSTRAINT streams_from_0_pkey PRIMARY KEY (run_id, channel);

-- Name: sweep_state sweep_state_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.sweep_state
    ADD CONSTRAINT sweep_state_pkey PRIMARY KEY (id);

-- Name: tool_policies tool_policies_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.tool_policies
    ADD CONSTRAINT tool_policies_pkey PRIMARY KEY (workspace_id, tool_name);

-- Name: traces_default traces_default_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.traces_default
    ADD CONSTRAINT traces_default_pkey PRIMARY KEY (agent_run_id, iteration, seq);

-- Name: traces_from_0 traces_from_0_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.traces_from_0
    ADD CONSTRAINT traces_from_0_pkey PRIMARY KEY (agent_run_id, iteration, seq);

-- Name: waits waits_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.waits
    ADD CONSTRAINT waits_pkey PRIMARY KEY (id);

-- Name: waits waits_step_key_is_unique; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.waits
    ADD CONSTRAINT waits_step_key_is_unique UNIQUE (step_id, wait_key);

-- Name: wake_ticket_secret wake_ticket_secret_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.wake_ticket_secret
    ADD CONSTRAINT wake_ticket_secret_pkey PRIMARY KEY (id);

-- Name: workers workers_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.workers
    ADD CONSTRAINT workers_pkey PRIMARY KEY (id);

-- Name: workspace_limits workspace_limits_pkey; Type: CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.workspace_limits
    ADD CONSTRAINT workspace_limits_pkey PRIMARY KEY (workspace_id);

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

-- Name: costs_at_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX costs_at_idx ON ONLY pgflight.costs USING btree (at);

-- Name: one_orphan_per_attempt; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE UNIQUE INDEX one_orphan_per_attempt ON ONLY pgflight.costs USING btree (agent_run_id, iteration, attempt_id) WHERE lease_lost;

-- Name: costs_default_agent_run_id_iteration_attempt_id_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE UNIQUE INDEX costs_default_agent_run_id_iteration_attempt_id_idx ON pgflight.costs_default USING btree (agent_run_id, iteration, attempt_id) WHERE lease_lost;

-- Name: one_call_per_iteration; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE UNIQUE INDEX one_call_per_iteration ON ONLY pgflight.costs USING btree (agent_run_id, iteration) WHERE (NOT lease_lost);

-- Name: costs_default_agent_run_id_iteration_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE UNIQUE INDEX costs_default_agent_run_id_iteration_idx ON pgflight.costs_default USING btree (agent_run_id, iteration) WHERE (NOT lease_lost);

-- Name: costs_default_at_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX costs_default_at_idx ON pgflight.costs_default USING btree (at);

-- Name: costs_run_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX costs_run_idx ON ONLY pgflight.costs USING btree (run_id);

-- Name: costs_default_run_id_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX costs_default_run_id_idx ON pgflight.costs_default USING btree (run_id);

-- Name: costs_from_0_agent_run_id_iteration_attempt_id_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE UNIQUE INDEX costs_from_0_agent_run_id_iteration_attempt_id_idx ON pgflight.costs_from_0 USING btree (agent_run_id, iteration, attempt_id) WHERE lease_lost;

-- Name: costs_from_0_agent_run_id_iteration_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE UNIQUE INDEX costs_from_0_agent_run_id_iteration_idx ON pgflight.costs_from_0 USING btree (agent_run_id, iteration) WHERE (NOT lease_lost);

-- Name: costs_from_0_at_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX costs_from_0_at_idx ON pgflight.costs_from_0 USING btree (at);

-- Name: costs_from_0_run_id_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX costs_from_0_run_id_idx ON pgflight.costs_from_0 USING btree (run_id);

-- Name: emitted_events_expires_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX emitted_events_expires_idx ON pgflight.emitted_events USING btree (expires_at);

-- Name: emitted_events_name_key_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX emitted_events_name_key_idx ON pgflight.emitted_events USING btree (workspace_id, name, key, id);

-- Name: event_channels_touched_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX event_channels_touched_idx ON pgflight.event_channels USING btree (touched_at);

-- Name: events_run_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX events_run_idx ON ONLY pgflight.events USING btree (run_id, id);

-- Name: events_default_run_id_id_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX events_default_run_id_id_idx ON pgflight.events_default USING btree (run_id, id);

-- Name: flow_slot_returns_scope_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX flow_slot_returns_scope_idx ON pgflight.flow_slot_returns USING btree (scope);

-- Name: idempotency_key_is_unique_per_workspace_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE UNIQUE INDEX idempotency_key_is_unique_per_workspace_idx ON pgflight.runs USING btree (workspace_id, idempotency_key) WHERE (idempotency_key IS NOT NULL);

-- Name: runs_created_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX runs_created_idx ON pgflight.runs USING btree (created_at);

-- Name: schedules_due_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX schedules_due_idx ON pgflight.schedules USING btree (next_fire_at) WHERE (next_fire_at IS NOT NULL);

-- Name: schedules_pending_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX schedules_pending_idx ON pgflight.schedules USING btree (pending_fire_at) WHERE (pending_fire_at IS NOT NULL);

-- Name: step_attempts_claim_event_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX step_attempts_claim_event_idx ON pgflight.step_attempts USING btree (claim_event_id) WHERE (claim_event_id IS NOT NULL);

-- Name: step_attempts_dead_letter_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX step_attempts_dead_letter_idx ON pgflight.step_attempts USING btree (id) WHERE (status = 'dead_letter'::text);

-- Name: step_attempts_deadline_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX step_attempts_deadline_idx ON pgflight.step_attempts USING btree (deadline_at) WHERE ((status = ANY (ARRAY['claimed'::text, 'running'::text])) AND (deadline_at IS NOT NULL));

-- Name: step_attempts_finish_event_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX step_attempts_finish_event_idx ON pgflight.step_attempts USING btree (finish_event_id) WHERE (finish_event_id IS NOT NULL);

-- Name: step_attempts_leased_key_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX step_attempts_leased_key_idx ON pgflight.step_attempts USING btree (workspace_id, concurrency_key) WHERE ((status = ANY (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text])) AND (concurrency_key IS NOT NULL));

-- Name: step_attempts_leased_ws_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX step_attempts_leased_ws_idx ON pgflight.step_attempts USING btree (workspace_id) WHERE (status = ANY (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text]));

-- Name: step_attempts_one_live_per_step_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE UNIQUE INDEX step_attempts_one_live_per_step_idx ON pgflight.step_attempts USING btree (step_id) WHERE (status = ANY (ARRAY['queued'::text, 'claimed'::text, 'running'::text, 'cancel_requested'::text, 'awaiting_children'::text, 'awaiting_approval'::text]));

-- Name: step_attempts_parked_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX step_attempts_parked_idx ON pgflight.step_attempts USING btree (status, step_id) WHERE (status = ANY (ARRAY['awaiting_children'::text, 'awaiting_approval'::text]));

-- Name: step_attempts_queued_key_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX step_attempts_queued_key_idx ON pgflight.step_attempts USING btree (workspace_id, concurrency_key, priority DESC, id) WHERE ((status = 'queued'::text) AND (concurrency_key IS NOT NULL));

-- Name: step_attempts_recipe_ready_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX step_attempts_recipe_ready_idx ON pgflight.step_attempts USING btree (recipe, workspace_id, priority DESC, available_after, id) WHERE ((status = 'queued'::text) AND (available_after < 'infinity'::timestamp with time zone));

-- Name: step_attempts_ws_ready_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX step_attempts_ws_ready_idx ON pgflight.step_attempts USING btree (workspace_id, priority DESC, available_after, id) WHERE ((status = 'queued'::text) AND (available_after < 'infinity'::timestamp with time zone));

-- Name: steps_key_is_unique_under_parent_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE UNIQUE INDEX steps_key_is_unique_under_parent_idx ON pgflight.steps USING btree (parent_id, step_key) WHERE (parent_id IS NOT NULL);

-- Name: steps_run_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX steps_run_idx ON pgflight.steps USING btree (run_id);

-- Name: traces_tool_call_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE UNIQUE INDEX traces_tool_call_idx ON ONLY pgflight.traces USING btree (agent_run_id, tool_use_id, block_type) WHERE (tool_use_id IS NOT NULL);

-- Name: traces_default_agent_run_id_tool_use_id_block_type_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE UNIQUE INDEX traces_default_agent_run_id_tool_use_id_block_type_idx ON pgflight.traces_default USING btree (agent_run_id, tool_use_id, block_type) WHERE (tool_use_id IS NOT NULL);

-- Name: traces_from_0_agent_run_id_tool_use_id_block_type_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE UNIQUE INDEX traces_from_0_agent_run_id_tool_use_id_block_type_idx ON pgflight.traces_from_0 USING btree (agent_run_id, tool_use_id, block_type) WHERE (tool_use_id IS NOT NULL);

-- Name: waits_pending_due_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX waits_pending_due_idx ON pgflight.waits USING btree (due_at) WHERE ((outcome IS NULL) AND (due_at IS NOT NULL));

-- Name: waits_pending_event_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX waits_pending_event_idx ON pgflight.waits USING btree (workspace_id, event_name, event_key) WHERE ((outcome IS NULL) AND (kind = 'event'::text));

-- Name: workers_login_live_idx; Type: INDEX; Schema: pgflight; Owner: pgflight_owner

CREATE INDEX workers_login_live_idx ON pgflight.workers USING btree (login) WHERE (stopped_at IS NULL);

-- Name: costs_default_agent_run_id_iteration_attempt_id_idx; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.one_orphan_per_attempt ATTACH PARTITION pgflight.costs_default_agent_run_id_iteration_attempt_id_idx;

-- Name: costs_default_agent_run_id_iteration_idx; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.one_call_per_iteration ATTACH PARTITION pgflight.costs_default_agent_run_id_iteration_idx;

-- Name: costs_default_at_idx; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.costs_at_idx ATTACH PARTITION pgflight.costs_default_at_idx;

-- Name: costs_default_pkey; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.costs_pkey ATTACH PARTITION pgflight.costs_default_pkey;

-- Name: costs_default_run_id_idx; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.costs_run_idx ATTACH PARTITION pgflight.costs_default_run_id_idx;

-- Name: costs_from_0_agent_run_id_iteration_attempt_id_idx; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.one_orphan_per_attempt ATTACH PARTITION pgflight.costs_from_0_agent_run_id_iteration_attempt_id_idx;

-- Name: costs_from_0_agent_run_id_iteration_idx; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.one_call_per_iteration ATTACH PARTITION pgflight.costs_from_0_agent_run_id_iteration_idx;

-- Name: costs_from_0_at_idx; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.costs_at_idx ATTACH PARTITION pgflight.costs_from_0_at_idx;

-- Name: costs_from_0_pkey; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.costs_pkey ATTACH PARTITION pgflight.costs_from_0_pkey;

-- Name: costs_from_0_run_id_idx; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.costs_run_idx ATTACH PARTITION pgflight.costs_from_0_run_id_idx;

-- Name: events_default_pkey; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.events_pkey ATTACH PARTITION pgflight.events_default_pkey;

-- Name: events_default_run_id_id_idx; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.events_run_idx ATTACH PARTITION pgflight.events_default_run_id_id_idx;

-- Name: stream_chunks_default_pkey; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.stream_chunk_is_unique ATTACH PARTITION pgflight.stream_chunks_default_pkey;

-- Name: stream_chunks_from_0_pkey; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.stream_chunk_is_unique ATTACH PARTITION pgflight.stream_chunks_from_0_pkey;

-- Name: streams_default_pkey; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.stream_is_unique ATTACH PARTITION pgflight.streams_default_pkey;

-- Name: streams_from_0_pkey; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.stream_is_unique ATTACH PARTITION pgflight.streams_from_0_pkey;

-- Name: traces_default_agent_run_id_tool_use_id_block_type_idx; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.traces_tool_call_idx ATTACH PARTITION pgflight.traces_default_agent_run_id_tool_use_id_block_type_idx;

-- Name: traces_default_pkey; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.block_is_unique ATTACH PARTITION pgflight.traces_default_pkey;

-- Name: traces_from_0_agent_run_id_tool_use_id_block_type_idx; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.traces_tool_call_idx ATTACH PARTITION pgflight.traces_from_0_agent_run_id_tool_use_id_block_type_idx;

-- Name: traces_from_0_pkey; Type: INDEX ATTACH; Schema: pgflight; Owner: pgflight_owner

ALTER INDEX pgflight.block_is_unique ATTACH PARTITION pgflight.traces_from_0_pkey;

-- Name: step_attempts step_attempts_fill_flow; Type: TRIGGER; Schema: pgflight; Owner: pgflight_owner

CREATE TRIGGER step_attempts_fill_flow BEFORE INSERT ON pgflight.step_attempts FOR EACH ROW WHEN ((new.workspace_id IS NULL)) EXECUTE FUNCTION pgflight._fill_attempt_flow();

-- Name: step_attempts step_attempts_key_slot_freed; Type: TRIGGER; Schema: pgflight; Owner: pgflight_owner

CREATE TRIGGER step_attempts_key_slot_freed AFTER UPDATE OF status ON pgflight.step_attempts FOR EACH ROW WHEN (((old.concurrency_key IS NOT NULL) AND (old.status = ANY (ARRAY['queued'::text, 'claimed'::text, 'running'::text, 'cancel_requested'::text])) AND (new.status <> ALL (ARRAY['queued'::text, 'claimed'::text, 'running'::text, 'cancel_requested'::text])))) EXECUTE FUNCTION pgflight._key_slot_freed();

-- Name: step_attempts step_attempts_return_slots; Type: TRIGGER; Schema: pgflight; Owner: pgflight_owner

CREATE TRIGGER step_attempts_return_slots BEFORE UPDATE OF status ON pgflight.step_attempts FOR EACH ROW WHEN (((old.slots <> 0) AND (old.status = ANY (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text])) AND (new.status <> ALL (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text])))) EXECUTE FUNCTION pgflight._return_slots();

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

-- Name: effects effects_step_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.effects
    ADD CONSTRAINT effects_step_id_fkey FOREIGN KEY (step_id) REFERENCES pgflight.steps(id) ON DELETE CASCADE;

-- Name: emitted_events emitted_events_workspace_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.emitted_events
    ADD CONSTRAINT emitted_events_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

-- Name: event_channels event_channels_workspace_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.event_channels
    ADD CONSTRAINT event_channels_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

-- Name: model_token_windows model_token_windows_workspace_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.model_token_windows
    ADD CONSTRAINT model_token_windows_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

-- Name: runs runs_workspace_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.runs
    ADD CONSTRAINT runs_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id);

-- Name: schedule_fires schedule_fires_schedule_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.schedule_fires
    ADD CONSTRAINT schedule_fires_schedule_id_fkey FOREIGN KEY (schedule_id) REFERENCES pgflight.schedules(id) ON DELETE CASCADE;

-- Name: schedules schedules_workspace_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.schedules
    ADD CONSTRAINT schedules_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

-- Name: step_attempts step_attempts_step_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.step_attempts
    ADD CONSTRAINT step_attempts_step_id_fkey FOREIGN KEY (step_id) REFERENCES pgflight.steps(id) ON DELETE CASCADE;

-- Name: steps steps_parent_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.steps
    ADD CONSTRAINT steps_parent_id_fkey FOREIGN KEY (parent_id) REFERENCES pgflight.steps(id) ON DELETE CASCADE;

-- Name: steps steps_run_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.steps
    ADD CONSTRAINT steps_run_id_fkey FOREIGN KEY (run_id) REFERENCES pgflight.runs(id) ON DELETE CASCADE;

-- Name: tool_policies tool_policies_workspace_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.tool_policies
    ADD CONSTRAINT tool_policies_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

-- Name: waits waits_step_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.waits
    ADD CONSTRAINT waits_step_id_fkey FOREIGN KEY (step_id) REFERENCES pgflight.steps(id) ON DELETE CASCADE;

-- Name: waits waits_workspace_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.waits
    ADD CONSTRAINT waits_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

-- Name: workspace_grants workspace_grants_workspace_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.workspace_grants
    ADD CONSTRAINT workspace_grants_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

-- Name: workspace_limits workspace_limits_workspace_id_fkey; Type: FK CONSTRAINT; Schema: pgflight; Owner: pgflight_owner

ALTER TABLE ONLY pgflight.workspace_limits
    ADD CONSTRAINT workspace_limits_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

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

-- Name: FUNCTION _backend_started_at(p_pid integer); Type: ACL; Schema: pgflight; Owner: pgflight_privileged

REVOKE ALL ON FUNCTION pgflight._backend_started_at(p_pid integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._backend_started_at(p_pid integer) TO pgflight_owner;

-- Name: FUNCTION _backoff_s(p_failed integer, p_backoff jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._backoff_s(p_failed integer, p_backoff jsonb) FROM PUBLIC;

-- Name: FUNCTION _bad_child_flow(p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._bad_child_flow(p_options jsonb) FROM PUBLIC;

-- Name: FUNCTION _bad_child_options(p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._bad_child_options(p_options jsonb) FROM PUBLIC;

-- Name: FUNCTION _bad_option(p_scope text, p_key text, p_value jsonb, p_expected text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._bad_option(p_scope text, p_key text, p_value jsonb, p_expected text) FROM PUBLIC;

-- Name: FUNCTION _bucket_tokens(p_tokens double precision, p_refilled_at timestamp with time zone, p_rate double precision, p_burst double precision, p_now timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._bucket_tokens(p_tokens double precision, p_refilled_at timestamp with time zone, p_rate double precision, p_burst double precision, p_now timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _call_budget_ids(p_run pgflight.agent_runs, p_now timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._call_budget_ids(p_run pgflight.agent_runs, p_now timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _cancel_steps(p_step_ids bigint[], p_actor text, p_reason text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._cancel_steps(p_step_ids bigint[], p_actor text, p_reason text) FROM PUBLIC;

-- Name: FUNCTION _cancel_tree(p_run_id bigint, p_step_id bigint, p_actor text, p_reason text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._cancel_tree(p_run_id bigint, p_step_id bigint, p_actor text, p_reason text) FROM PUBLIC;

-- Name: FUNCTION _cascade_root(p_step_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._cascade_root(p_step_id bigint) FROM PUBLIC;

-- Name: FUNCTION _check_arg(p_name text, p_value double precision, p_min double precision, p_max double precision); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._check_arg(p_name text, p_value double precision, p_min double precision, p_max double precision) FROM PUBLIC;

-- Name: FUNCTION _check_limit(p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._check_limit(p_limit integer) FROM PUBLIC;

-- Name: FUNCTION _check_options(p_scope text, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._check_options(p_scope text, p_options jsonb) FROM PUBLIC;

-- Name: FUNCTION _claim_fair(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_start boolean, p_now timestamp with time zone, p_workspaces bigint[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._claim_fair(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_start boolean, p_now timestamp with time zone, p_workspaces bigint[]) FROM PUBLIC;

-- Name: FUNCTION _claim_global_shares(p_global integer, p_recipes text[], p_lane_ws bigint[], p_ws bigint[], p_batch integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._claim_global_shares(p_global integer, p_recipes text[], p_lane_ws bigint[], p_ws bigint[], p_batch integer) FROM PUBLIC;

-- Name: FUNCTION _claim_quotas(p_batch integer, p_shares integer[], p_first integer, p_fair integer[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._claim_quotas(p_batch integer, p_shares integer[], p_first integer, p_fair integer[]) FROM PUBLIC;

-- Name: FUNCTION _claim_recipes(p_recipes text[], p_now timestamp with time zone, OUT recipes text[], OUT rated text[], OUT rated_left integer[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._claim_recipes(p_recipes text[], p_now timestamp with time zone, OUT recipes text[], OUT rated text[], OUT rated_left integer[]) FROM PUBLIC;

-- Name: FUNCTION _claim_set(p_worker_id bigint, p_lane_ws bigint[], p_lane_recipe text[], p_ws bigint[], p_quota integer[], p_slots smallint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._claim_set(p_worker_id bigint, p_lane_ws bigint[], p_lane_recipe text[], p_ws bigint[], p_quota integer[], p_slots smallint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_now timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_now timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _complete_refusing(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_errors jsonb[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._complete_refusing(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_errors jsonb[]) FROM PUBLIC;

-- Name: FUNCTION _concurrency_option(p_options jsonb, OUT o_key text, OUT o_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._concurrency_option(p_options jsonb, OUT o_key text, OUT o_limit integer) FROM PUBLIC;

-- Name: FUNCTION _cron_field(p_text text, p_min integer, p_max integer, p_names text[], p_what text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._cron_field(p_text text, p_min integer, p_max integer, p_names text[], p_what text) FROM PUBLIC;

-- Name: FUNCTION _cron_next(p_seconds integer[], p_minutes integer[], p_hours integer[], p_days integer[], p_months integer[], p_weekdays integer[], p_any_day boolean, p_any_weekday boolean, p_tz text, p_after timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._cron_next(p_seconds integer[], p_minutes integer[], p_hours integer[], p_days integer[], p_months integer[], p_weekdays integer[], p_any_day boolean, p_any_weekday boolean, p_tz text, p_after timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _cron_parse(p_expr text, OUT seconds integer[], OUT minutes integer[], OUT hours integer[], OUT days integer[], OUT months integer[], OUT weekdays integer[], OUT any_day boolean, OUT any_weekday boolean); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._cron_parse(p_expr text, OUT seconds integer[], OUT minutes integer[], OUT hours integer[], OUT days integer[], OUT months integer[], OUT weekdays integer[], OUT any_day boolean, OUT any_weekday boolean) FROM PUBLIC;

-- Name: FUNCTION _dead_letter_poisoned(p_attempt_id bigint, p_sqlstate text, p_message text, p_actor text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._dead_letter_poisoned(p_attempt_id bigint, p_sqlstate text, p_message text, p_actor text) FROM PUBLIC;

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

-- Name: FUNCTION _fan_in_clear(p_parent bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._fan_in_clear(p_parent bigint) FROM PUBLIC;

-- Name: FUNCTION _fan_in_poke(p_step_ids bigint[], p_finals text[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._fan_in_poke(p_step_ids bigint[], p_finals text[]) FROM PUBLIC;

-- Name: FUNCTION _fan_in_stripe(p_parent bigint, p_created integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._fan_in_stripe(p_parent bigint, p_created integer) FROM PUBLIC;

-- Name: FUNCTION _fan_in_take(p_parent bigint, p_n integer, OUT dry integer, OUT rest integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._fan_in_take(p_parent bigint, p_n integer, OUT dry integer, OUT rest integer) FROM PUBLIC;

-- Name: FUNCTION _fill_attempt_flow(); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._fill_attempt_flow() FROM PUBLIC;

-- Name: FUNCTION _fire_schedule(p_schedule_id bigint, p_workspace text, p_name text, p_recipe text, p_input jsonb, p_run_options jsonb, p_fire_at timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._fire_schedule(p_schedule_id bigint, p_workspace text, p_name text, p_recipe text, p_input jsonb, p_run_options jsonb, p_fire_at timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _firehose_partitions(); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._firehose_partitions() FROM PUBLIC;

-- Name: FUNCTION _fork_agent_budgets(p_workspace_id bigint, p_run_id bigint, p_step_id bigint, p_max_run_usd numeric, p_max_usd numeric, p_max_wall_s double precision, p_now timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._fork_agent_budgets(p_workspace_id bigint, p_run_id bigint, p_step_id bigint, p_max_run_usd numeric, p_max_usd numeric, p_max_wall_s double precision, p_now timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _fork_agent_copy_iterations(p_from_agent_run_id bigint, p_at_iteration integer, p_results jsonb, p_agent_run_id bigint, p_step_id bigint, p_run_id bigint, p_workspace_id bigint, p_now timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._fork_agent_copy_iterations(p_from_agent_run_id bigint, p_at_iteration integer, p_results jsonb, p_agent_run_id bigint, p_step_id bigint, p_run_id bigint, p_workspace_id bigint, p_now timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _fork_agent_patch(p_patch jsonb, p_max_input_bytes bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._fork_agent_patch(p_patch jsonb, p_max_input_bytes bigint) FROM PUBLIC;

-- Name: FUNCTION _fork_agent_require_results(p_agent_run_id bigint, p_iteration integer, p_results jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._fork_agent_require_results(p_agent_run_id bigint, p_iteration integer, p_results jsonb) FROM PUBLIC;

-- Name: FUNCTION _give_slots_back(p_scopes bigint[], p_stripes smallint[], p_counts integer[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._give_slots_back(p_scopes bigint[], p_stripes smallint[], p_counts integer[]) FROM PUBLIC;

-- Name: FUNCTION _id_partitions(p_parent text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._id_partitions(p_parent text) FROM PUBLIC;

-- Name: FUNCTION _iteration_refusal(p_run pgflight.agent_runs, p_iteration integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._iteration_refusal(p_run pgflight.agent_runs, p_iteration integer) FROM PUBLIC;

-- Name: FUNCTION _json_depth(p_value jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._json_depth(p_value jsonb) FROM PUBLIC;

-- Name: FUNCTION _json_too_deep(p_value jsonb, p_cap integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._json_too_deep(p_value jsonb, p_cap integer) FROM PUBLIC;

-- Name: FUNCTION _key_slot_freed(); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._key_slot_freed() FROM PUBLIC;

-- Name: FUNCTION _lane_workspaces(p_lane text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._lane_workspaces(p_lane text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._lane_workspaces(p_lane text) TO pgflight_worker;
GRANT ALL ON FUNCTION pgflight._lane_workspaces(p_lane text) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight._lane_workspaces(p_lane text) TO pgflight_reader;

-- Name: FUNCTION _lease_attempts(p_worker_id bigint, p_ids bigint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone, p_slots smallint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._lease_attempts(p_worker_id bigint, p_ids bigint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone, p_slots smallint) FROM PUBLIC;

-- Name: FUNCTION _limit(p_name text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._limit(p_name text) FROM PUBLIC;

-- Name: FUNCTION _limit_option(p_options jsonb, p_key text, p_min double precision, p_max double precision, p_integer boolean); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._limit_option(p_options jsonb, p_key text, p_min double precision, p_max double precision, p_integer boolean) FROM PUBLIC;

-- Name: FUNCTION _lock_cascade(p_attempt_id bigint, p_nowait boolean); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._lock_cascade(p_attempt_id bigint, p_nowait boolean) FROM PUBLIC;

-- Name: FUNCTION _lock_event_channel(p_workspace_id bigint, p_name text, p_key text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._lock_event_channel(p_workspace_id bigint, p_name text, p_key text) FROM PUBLIC;

-- Name: FUNCTION _lock_held(p_attempt_id bigint, p_token bigint, p_operation text, p_with_cancel_requested boolean); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._lock_held(p_attempt_id bigint, p_token bigint, p_operation text, p_with_cancel_requested boolean) FROM PUBLIC;

-- Name: FUNCTION _lock_subtree(p_top bigint, p_nowait boolean); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._lock_subtree(p_top bigint, p_nowait boolean) FROM PUBLIC;

-- Name: FUNCTION _maintain_id_partitions(p_tables text[], p_ids text, p_width bigint, p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._maintain_id_partitions(p_tables text[], p_ids text, p_width bigint, p_limit integer) FROM PUBLIC;

-- Name: FUNCTION _may(p_lane text, p_workspace_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) TO pgflight_worker;
GRANT ALL ON FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) TO pgflight_reader;

-- Name: FUNCTION _model_call_options_ok(p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._model_call_options_ok(p_options jsonb) FROM PUBLIC;

-- Name: FUNCTION _move_budget(p_ids bigint[], p_reserve numeric, p_spend numeric, p_release numeric, p_check boolean, p_now timestamp with time zone, p_what text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._move_budget(p_ids bigint[], p_reserve numeric, p_spend numeric, p_release numeric, p_check boolean, p_now timestamp with time zone, p_what text) FROM PUBLIC;

-- Name: FUNCTION _notify_ready(); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._notify_ready() FROM PUBLIC;

-- Name: FUNCTION _null_refused(p_operation text, p_what text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._null_refused(p_operation text, p_what text) FROM PUBLIC;

-- Name: FUNCTION _opt_bool(p_options jsonb, p_key text, p_default boolean, p_scope text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._opt_bool(p_options jsonb, p_key text, p_default boolean, p_scope text) FROM PUBLIC;

-- Name: FUNCTION _opt_clamped(p_options jsonb, p_key text, p_default double precision, p_min numeric, p_max numeric); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._opt_clamped(p_options jsonb, p_key text, p_default double precision, p_min numeric, p_max numeric) FROM PUBLIC;

-- Name: FUNCTION _opt_int(p_options jsonb, p_key text, p_default bigint, p_min numeric, p_max numeric, p_scope text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._opt_int(p_options jsonb, p_key text, p_default bigint, p_min numeric, p_max numeric, p_scope text) FROM PUBLIC;

-- Name: FUNCTION _opt_interval(p_options jsonb, p_key text, p_default_s double precision, p_min_s numeric, p_max_s numeric, p_scope text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._opt_interval(p_options jsonb, p_key text, p_default_s double precision, p_min_s numeric, p_max_s numeric, p_scope text) FROM PUBLIC;

-- Name: FUNCTION _opt_num(p_options jsonb, p_key text, p_default double precision); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._opt_num(p_options jsonb, p_key text, p_default double precision) FROM PUBLIC;

-- Name: FUNCTION _opt_number(p_options jsonb, p_key text, p_default double precision, p_min numeric, p_max numeric, p_scope text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._opt_number(p_options jsonb, p_key text, p_default double precision, p_min numeric, p_max numeric, p_scope text) FROM PUBLIC;

-- Name: FUNCTION _opt_string(p_options jsonb, p_key text, p_default text, p_min_len integer, p_max_len integer, p_scope text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._opt_string(p_options jsonb, p_key text, p_default text, p_min_len integer, p_max_len integer, p_scope text) FROM PUBLIC;

-- Name: FUNCTION _opt_text(p_options jsonb, p_key text, p_default text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._opt_text(p_options jsonb, p_key text, p_default text) FROM PUBLIC;

-- Name: FUNCTION _option_map(); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._option_map() FROM PUBLIC;

-- Name: FUNCTION _option_spec(); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._option_spec() FROM PUBLIC;

-- Name: FUNCTION _park_on_wait(p_att pgflight.step_attempts, p_wait pgflight.waits); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._park_on_wait(p_att pgflight.step_attempts, p_wait pgflight.waits) FROM PUBLIC;

-- Name: FUNCTION _price_of(p_price pgflight.model_prices, p_in bigint, p_out bigint, p_cw bigint, p_cr bigint, p_cw_1h bigint, p_searches bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._price_of(p_price pgflight.model_prices, p_in bigint, p_out bigint, p_cw bigint, p_cr bigint, p_cw_1h bigint, p_searches bigint) FROM PUBLIC;

-- Name: FUNCTION _price_usd(p_model text, p_usage jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._price_usd(p_model text, p_usage jsonb) FROM PUBLIC;

-- Name: FUNCTION _queued_recipes(); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._queued_recipes() FROM PUBLIC;

-- Name: FUNCTION _raise_budget_exceeded(p_refusal jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._raise_budget_exceeded(p_refusal jsonb) FROM PUBLIC;

-- Name: FUNCTION _ready_lanes(p_recipes text[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._ready_lanes(p_recipes text[]) FROM PUBLIC;

-- Name: FUNCTION _reclaim(p_now timestamp with time zone, p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._reclaim(p_now timestamp with time zone, p_limit integer) FROM PUBLIC;

-- Name: FUNCTION _reclaim_end(p_now timestamp with time zone, p_ids bigint[], p_outcomes text[], p_errors jsonb[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._reclaim_end(p_now timestamp with time zone, p_ids bigint[], p_outcomes text[], p_errors jsonb[]) FROM PUBLIC;

-- Name: FUNCTION _reclaim_picked(p_now timestamp with time zone, p_ids bigint[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._reclaim_picked(p_now timestamp with time zone, p_ids bigint[]) FROM PUBLIC;

-- Name: FUNCTION _reclaim_retry(p_now timestamp with time zone, p_ids bigint[], p_errors jsonb[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._reclaim_retry(p_now timestamp with time zone, p_ids bigint[], p_errors jsonb[]) FROM PUBLIC;

-- Name: FUNCTION _reclaim_rows(p_now timestamp with time zone, p_ids bigint[], p_errors jsonb[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._reclaim_rows(p_now timestamp with time zone, p_ids bigint[], p_errors jsonb[]) FROM PUBLIC;

-- Name: FUNCTION _record_stale(p_attempt_id bigint, p_token bigint, p_operation text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._record_stale(p_attempt_id bigint, p_token bigint, p_operation text) FROM PUBLIC;

-- Name: FUNCTION _refuse_fence_arrays(p_operation text, p_attempt_ids bigint[], p_tokens bigint[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._refuse_fence_arrays(p_operation text, p_attempt_ids bigint[], p_tokens bigint[]) FROM PUBLIC;

-- Name: FUNCTION _reject_write(p_attempt_id bigint, p_token bigint, p_operation text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._reject_write(p_attempt_id bigint, p_token bigint, p_operation text) FROM PUBLIC;

-- Name: FUNCTION _release_reservation(p_agent_run_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._release_reservation(p_agent_run_id bigint) FROM PUBLIC;

-- Name: FUNCTION _reopen_step(p_step_id bigint, p_actor text, p_reason text, p_note text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._reopen_step(p_step_id bigint, p_actor text, p_reason text, p_note text) FROM PUBLIC;

-- Name: FUNCTION _require_cap(p_cap text, p_limit double precision, p_value double precision, p_what text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._require_cap(p_cap text, p_limit double precision, p_value double precision, p_what text) FROM PUBLIC;

-- Name: FUNCTION _require_json_depth(p_value jsonb, p_what text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._require_json_depth(p_value jsonb, p_what text) FROM PUBLIC;

-- Name: FUNCTION _require_known_keys(p_options jsonb, p_allowed text[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._require_known_keys(p_options jsonb, p_allowed text[]) FROM PUBLIC;

-- Name: FUNCTION _require_lane(p_lane text, p_workspace_id bigint, p_operation text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._require_lane(p_lane text, p_workspace_id bigint, p_operation text) FROM PUBLIC;

-- Name: FUNCTION _require_lane_on_run(p_lane text, p_run_id bigint, p_operation text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._require_lane_on_run(p_lane text, p_run_id bigint, p_operation text) FROM PUBLIC;

-- Name: FUNCTION _require_lane_on_step(p_lane text, p_step_id bigint, p_operation text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._require_lane_on_step(p_lane text, p_step_id bigint, p_operation text) FROM PUBLIC;

-- Name: FUNCTION _require_limit(p_name text, p_value integer, p_max integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._require_limit(p_name text, p_value integer, p_max integer) FROM PUBLIC;

-- Name: FUNCTION _require_own_attempt(p_attempt_id bigint, p_token bigint, p_operation text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._require_own_attempt(p_attempt_id bigint, p_token bigint, p_operation text) FROM PUBLIC;

-- Name: FUNCTION _require_positive(p_name text, p_value double precision); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._require_positive(p_name text, p_value double precision) FROM PUBLIC;

-- Name: FUNCTION _require_readable_run(p_run_id bigint, p_operation text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._require_readable_run(p_run_id bigint, p_operation text) FROM PUBLIC;

-- Name: FUNCTION _reserve(p_run pgflight.agent_runs, p_attempt_id bigint, p_iteration integer, p_est_usd numeric, p_now timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._reserve(p_run pgflight.agent_runs, p_attempt_id bigint, p_iteration integer, p_est_usd numeric, p_now timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _resolve_wait(p_wait_id bigint, p_outcome text, p_payload jsonb, p_event_id text, p_actor text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._resolve_wait(p_wait_id bigint, p_outcome text, p_payload jsonb, p_event_id text, p_actor text) FROM PUBLIC;

-- Name: FUNCTION _return_slots(); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._return_slots() FROM PUBLIC;

-- Name: FUNCTION _row_triggers_off(); Type: ACL; Schema: pgflight; Owner: pgflight_privileged

REVOKE ALL ON FUNCTION pgflight._row_triggers_off() FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._row_triggers_off() TO pgflight_owner;

-- Name: FUNCTION _row_triggers_on(p_before text); Type: ACL; Schema: pgflight; Owner: pgflight_privileged

REVOKE ALL ON FUNCTION pgflight._row_triggers_on(p_before text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._row_triggers_on(p_before text) TO pgflight_owner;

-- Name: FUNCTION _seq_band_system(); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._seq_band_system() FROM PUBLIC;

-- Name: FUNCTION _seq_band_tool_results(); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._seq_band_tool_results() FROM PUBLIC;

-- Name: FUNCTION _set_paused(p_kind text, p_name text, p_pause boolean, p_note text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._set_paused(p_kind text, p_name text, p_pause boolean, p_note text) FROM PUBLIC;

-- Name: FUNCTION _set_slot_cap(p_scope bigint, p_cap integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._set_slot_cap(p_scope bigint, p_cap integer) FROM PUBLIC;

-- Name: FUNCTION _settle_model_call(p_run pgflight.agent_runs, p_iteration integer, p_usd numeric, p_reserved boolean, p_want boolean, p_next_est_usd numeric, p_next_ids bigint[], p_now timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._settle_model_call(p_run pgflight.agent_runs, p_iteration integer, p_usd numeric, p_reserved boolean, p_want boolean, p_next_est_usd numeric, p_next_ids bigint[], p_now timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _settle_tokens(p_run pgflight.agent_runs, p_limit bigint, p_tokens bigint, p_reserved boolean, p_now timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._settle_tokens(p_run pgflight.agent_runs, p_limit bigint, p_tokens bigint, p_reserved boolean, p_now timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _start_at(p_options jsonb, p_now timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._start_at(p_options jsonb, p_now timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _step_finished(p_step_id bigint, p_final text, p_actor text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._step_finished(p_step_id bigint, p_final text, p_actor text) FROM PUBLIC;

-- Name: FUNCTION _steps_finished(p_step_ids bigint[], p_finals text[], p_actor text, p_now timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._steps_finished(p_step_ids bigint[], p_finals text[], p_actor text, p_now timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _store_tool_results(p_run_id bigint, p_attempt_id bigint, p_results jsonb, p_now timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._store_tool_results(p_run_id bigint, p_attempt_id bigint, p_results jsonb, p_now timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _submit_runs_refuse_conflict(p_runs jsonb, p_workspace_id bigint, p_created integer[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._submit_runs_refuse_conflict(p_runs jsonb, p_workspace_id bigint, p_created integer[]) FROM PUBLIC;

-- Name: FUNCTION _submit_runs_refuse_element(p_element jsonb, p_max_input_bytes bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._submit_runs_refuse_element(p_element jsonb, p_max_input_bytes bigint) FROM PUBLIC;

-- Name: FUNCTION _submit_runs_require_depth(p_runs jsonb, p_max_depth integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._submit_runs_require_depth(p_runs jsonb, p_max_depth integer) FROM PUBLIC;

-- Name: FUNCTION _submit_runs_workspace(p_workspace text, OUT id bigint, OUT max_run_usd numeric); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._submit_runs_workspace(p_workspace text, OUT id bigint, OUT max_run_usd numeric) FROM PUBLIC;

-- Name: FUNCTION _sweep_loop_lease(p_take boolean); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._sweep_loop_lease(p_take boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._sweep_loop_lease(p_take boolean) TO pgflight_cron;

-- Name: FUNCTION _take_slots_all(p_scopes bigint[], p_wants integer[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._take_slots_all(p_scopes bigint[], p_wants integer[]) FROM PUBLIC;

-- Name: FUNCTION _token_admission(p_run pgflight.agent_runs, p_limit bigint, p_now timestamp with time zone); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._token_admission(p_run pgflight.agent_runs, p_limit bigint, p_now timestamp with time zone) FROM PUBLIC;

-- Name: FUNCTION _token_estimate(p_run pgflight.agent_runs, p_limit bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._token_estimate(p_run pgflight.agent_runs, p_limit bigint) FROM PUBLIC;

-- Name: FUNCTION _tree_steps(p_run_id bigint, p_step_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._tree_steps(p_run_id bigint, p_step_id bigint) FROM PUBLIC;

-- Name: FUNCTION _unknown_attempt(p_attempt_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._unknown_attempt(p_attempt_id bigint) FROM PUBLIC;

-- Name: FUNCTION _unknown_workspace(p_workspace text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._unknown_workspace(p_workspace text) FROM PUBLIC;

-- Name: FUNCTION _usage_counts_ok(p_usage jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._usage_counts_ok(p_usage jsonb) FROM PUBLIC;

-- Name: FUNCTION _usage_extras(p_usage jsonb, OUT cw_1h bigint, OUT searches bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._usage_extras(p_usage jsonb, OUT cw_1h bigint, OUT searches bigint) FROM PUBLIC;

-- Name: FUNCTION _vacuum_horizon(); Type: ACL; Schema: pgflight; Owner: pgflight_privileged

REVOKE ALL ON FUNCTION pgflight._vacuum_horizon() FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._vacuum_horizon() TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight._vacuum_horizon() TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight._vacuum_horizon() TO pgflight_owner;

-- Name: FUNCTION _wake(p_step_id bigint, p_reason text, p_actor text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._wake(p_step_id bigint, p_reason text, p_actor text) FROM PUBLIC;

-- Name: FUNCTION _workspace_id(p_workspace text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight._workspace_id(p_workspace text) FROM PUBLIC;

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

-- Name: FUNCTION approve(p_step_id bigint, p_decision text, p_actor text, p_note text, p_gate_key text, p_payload jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.approve(p_step_id bigint, p_decision text, p_actor text, p_note text, p_gate_key text, p_payload jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.approve(p_step_id bigint, p_decision text, p_actor text, p_note text, p_gate_key text, p_payload jsonb) TO pgflight_operator;

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

-- Name: FUNCTION complete_and_claim(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_batch_size integer, p_lease_s double precision, p_recipes text[], p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.complete_and_claim(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_batch_size integer, p_lease_s double precision, p_recipes text[], p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.complete_and_claim(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_batch_size integer, p_lease_s double precision, p_recipes text[], p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]) TO pgflight_worker;

-- Name: FUNCTION complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results text[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results text[]) TO pgflight_worker;

-- Name: FUNCTION complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb) TO pgflight_worker;

-- Name: FUNCTION complete_step_text(p_attempt_id bigint, p_token bigint, p_result text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.complete_step_text(p_attempt_id bigint, p_token bigint, p_result text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.complete_step_text(p_attempt_id bigint, p_token bigint, p_result text) TO pgflight_worker;

-- Name: FUNCTION complete_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text, p_result jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.complete_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text, p_result jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.complete_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text, p_result jsonb) TO pgflight_worker;

-- Name: FUNCTION complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_results jsonb, p_next_iteration integer, p_est_usd numeric); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_results jsonb, p_next_iteration integer, p_est_usd numeric) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_results jsonb, p_next_iteration integer, p_est_usd numeric) TO pgflight_worker;

-- Name: FUNCTION cost_by_day(p_days integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.cost_by_day(p_days integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.cost_by_day(p_days integer) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.cost_by_day(p_days integer) TO pgflight_operator;

-- Name: FUNCTION create_workspace(p_name text, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.create_workspace(p_name text, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.create_workspace(p_name text, p_options jsonb) TO pgflight_operator;

-- Name: FUNCTION dead_letter_page(p_after bigint, p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.dead_letter_page(p_after bigint, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.dead_letter_page(p_after bigint, p_limit integer) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.dead_letter_page(p_after bigint, p_limit integer) TO pgflight_operator;

-- Name: FUNCTION deregister_worker(p_worker_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.deregister_worker(p_worker_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.deregister_worker(p_worker_id bigint) TO pgflight_worker;

-- Name: FUNCTION drop_tool_policy(p_workspace text, p_tool text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.drop_tool_policy(p_workspace text, p_tool text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.drop_tool_policy(p_workspace text, p_tool text) TO pgflight_operator;

-- Name: FUNCTION emit_event(p_workspace text, p_name text, p_key text, p_payload jsonb, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.emit_event(p_workspace text, p_name text, p_key text, p_payload jsonb, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.emit_event(p_workspace text, p_name text, p_key text, p_payload jsonb, p_options jsonb) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.emit_event(p_workspace text, p_name text, p_key text, p_payload jsonb, p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION enforce_budgets(p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.enforce_budgets(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.enforce_budgets(p_limit integer) TO pgflight_operator;

-- Name: FUNCTION expire_approvals(p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.expire_approvals(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.expire_approvals(p_limit integer) TO pgflight_operator;

-- Name: FUNCTION expire_waits(p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.expire_waits(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.expire_waits(p_limit integer) TO pgflight_operator;

-- Name: FUNCTION fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION fail_step_text(p_attempt_id bigint, p_token bigint, p_error text, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.fail_step_text(p_attempt_id bigint, p_token bigint, p_error text, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.fail_step_text(p_attempt_id bigint, p_token bigint, p_error text, p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION find_effect(p_step_id bigint, p_key text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.find_effect(p_step_id bigint, p_key text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.find_effect(p_step_id bigint, p_key text) TO pgflight_worker;

-- Name: FUNCTION fire_schedules(p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.fire_schedules(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.fire_schedules(p_limit integer) TO pgflight_operator;

-- Name: FUNCTION fork_agent(p_step_id bigint, p_at_iteration integer, p_patch jsonb, p_reason text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.fork_agent(p_step_id bigint, p_at_iteration integer, p_patch jsonb, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.fork_agent(p_step_id bigint, p_at_iteration integer, p_patch jsonb, p_reason text) TO pgflight_operator;

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

-- Name: FUNCTION maintain_partitions(p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.maintain_partitions(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.maintain_partitions(p_limit integer) TO pgflight_operator;

-- Name: FUNCTION mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text) TO pgflight_worker;

-- Name: FUNCTION metrics_snapshot(p_events_after bigint, p_max_events integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.metrics_snapshot(p_events_after bigint, p_max_events integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.metrics_snapshot(p_events_after bigint, p_max_events integer) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.metrics_snapshot(p_events_after bigint, p_max_events integer) TO pgflight_operator;

-- Name: FUNCTION pause_recipe(p_name text, p_note text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.pause_recipe(p_name text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.pause_recipe(p_name text, p_note text) TO pgflight_operator;

-- Name: FUNCTION pause_workspace(p_name text, p_note text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.pause_workspace(p_name text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.pause_workspace(p_name text, p_note text) TO pgflight_operator;

-- Name: FUNCTION pending_approvals(p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.pending_approvals(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.pending_approvals(p_limit integer) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.pending_approvals(p_limit integer) TO pgflight_operator;

-- Name: FUNCTION price_usd(p_model text, p_usage jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) TO pgflight_worker;
GRANT ALL ON FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) TO pgflight_reader;

-- Name: FUNCTION purge_finished(p_older_than_s double precision, p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.purge_finished(p_older_than_s double precision, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.purge_finished(p_older_than_s double precision, p_limit integer) TO pgflight_operator;

-- Name: FUNCTION queue_depths(); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.queue_depths() FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.queue_depths() TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.queue_depths() TO pgflight_operator;

-- Name: FUNCTION reclaim_expired(p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.reclaim_expired(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.reclaim_expired(p_limit integer) TO pgflight_operator;

-- Name: FUNCTION record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb) TO pgflight_worker;

-- Name: FUNCTION record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text, p_options jsonb, p_next_est_usd numeric); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text, p_options jsonb, p_next_est_usd numeric) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text, p_options jsonb, p_next_est_usd numeric) TO pgflight_worker;

-- Name: FUNCTION record_orphan_cost(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_usage jsonb, p_model text, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.record_orphan_cost(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_usage jsonb, p_model text, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.record_orphan_cost(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_usage jsonb, p_model text, p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION record_stale_write(p_attempt_id bigint, p_token bigint, p_operation text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.record_stale_write(p_attempt_id bigint, p_token bigint, p_operation text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.record_stale_write(p_attempt_id bigint, p_token bigint, p_operation text) TO pgflight_worker;

-- Name: FUNCTION record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_role text, p_block_type text, p_content jsonb, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_role text, p_block_type text, p_content jsonb, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_role text, p_block_type text, p_content jsonb, p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION register_worker(p_name text, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.register_worker(p_name text, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.register_worker(p_name text, p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION release_step(p_attempt_id bigint, p_token bigint, p_reason text, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.release_step(p_attempt_id bigint, p_token bigint, p_reason text, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.release_step(p_attempt_id bigint, p_token bigint, p_reason text, p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION replay_from(p_step_id bigint, p_actor text, p_note text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.replay_from(p_step_id bigint, p_actor text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.replay_from(p_step_id bigint, p_actor text, p_note text) TO pgflight_operator;

-- Name: FUNCTION request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb, p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION reserve_budget(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_est_usd numeric); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.reserve_budget(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_est_usd numeric) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.reserve_budget(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_est_usd numeric) TO pgflight_worker;

-- Name: FUNCTION resume_recipe(p_name text, p_note text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.resume_recipe(p_name text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.resume_recipe(p_name text, p_note text) TO pgflight_operator;

-- Name: FUNCTION resume_workspace(p_name text, p_note text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.resume_workspace(p_name text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.resume_workspace(p_name text, p_note text) TO pgflight_operator;

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

-- Name: FUNCTION run_list_page(p_after bigint, p_limit integer, p_filters jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.run_list_page(p_after bigint, p_limit integer, p_filters jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.run_list_page(p_after bigint, p_limit integer, p_filters jsonb) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.run_list_page(p_after bigint, p_limit integer, p_filters jsonb) TO pgflight_operator;

-- Name: FUNCTION run_status(p_run_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.run_status(p_run_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.run_status(p_run_id bigint) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.run_status(p_run_id bigint) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.run_status(p_run_id bigint) TO pgflight_worker;

-- Name: FUNCTION run_sweeps(); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.run_sweeps() FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.run_sweeps() TO pgflight_operator;

-- Name: FUNCTION run_trace_context(p_run_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.run_trace_context(p_run_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.run_trace_context(p_run_id bigint) TO pgflight_worker;
GRANT ALL ON FUNCTION pgflight.run_trace_context(p_run_id bigint) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.run_trace_context(p_run_id bigint) TO pgflight_reader;

-- Name: FUNCTION run_waits(p_run_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.run_waits(p_run_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.run_waits(p_run_id bigint) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.run_waits(p_run_id bigint) TO pgflight_operator;

-- Name: FUNCTION schedule_run(p_workspace text, p_name text, p_cron text, p_recipe text, p_input jsonb, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.schedule_run(p_workspace text, p_name text, p_cron text, p_recipe text, p_input jsonb, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.schedule_run(p_workspace text, p_name text, p_cron text, p_recipe text, p_input jsonb, p_options jsonb) TO pgflight_operator;

-- Name: FUNCTION set_global_limits(p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.set_global_limits(p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.set_global_limits(p_options jsonb) TO pgflight_operator;

-- Name: FUNCTION set_recipe_limits(p_recipe text, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.set_recipe_limits(p_recipe text, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.set_recipe_limits(p_recipe text, p_options jsonb) TO pgflight_operator;

-- Name: FUNCTION set_tool_policy(p_workspace text, p_tool text, p_policy jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.set_tool_policy(p_workspace text, p_tool text, p_policy jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.set_tool_policy(p_workspace text, p_tool text, p_policy jsonb) TO pgflight_operator;

-- Name: FUNCTION set_workspace_limits(p_workspace text, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.set_workspace_limits(p_workspace text, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.set_workspace_limits(p_workspace text, p_options jsonb) TO pgflight_operator;

-- Name: FUNCTION spawn_children(p_attempt_id bigint, p_token bigint, p_children jsonb, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.spawn_children(p_attempt_id bigint, p_token bigint, p_children jsonb, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.spawn_children(p_attempt_id bigint, p_token bigint, p_children jsonb, p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION start_step(p_attempt_id bigint, p_token bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.start_step(p_attempt_id bigint, p_token bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.start_step(p_attempt_id bigint, p_token bigint) TO pgflight_worker;

-- Name: FUNCTION stream_channels(p_run_id bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.stream_channels(p_run_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.stream_channels(p_run_id bigint) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.stream_channels(p_run_id bigint) TO pgflight_reader;

-- Name: FUNCTION stream_read(p_run_id bigint, p_channel text, p_after_seq bigint, p_limit integer, p_wait_s double precision); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.stream_read(p_run_id bigint, p_channel text, p_after_seq bigint, p_limit integer, p_wait_s double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.stream_read(p_run_id bigint, p_channel text, p_after_seq bigint, p_limit integer, p_wait_s double precision) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.stream_read(p_run_id bigint, p_channel text, p_after_seq bigint, p_limit integer, p_wait_s double precision) TO pgflight_reader;

-- Name: FUNCTION stream_write(p_attempt_id bigint, p_token bigint, p_channel text, p_chunks text[], p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.stream_write(p_attempt_id bigint, p_token bigint, p_channel text, p_chunks text[], p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.stream_write(p_attempt_id bigint, p_token bigint, p_channel text, p_chunks text[], p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION submit_run(p_workspace text, p_recipe text, p_input jsonb, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.submit_run(p_workspace text, p_recipe text, p_input jsonb, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.submit_run(p_workspace text, p_recipe text, p_input jsonb, p_options jsonb) TO pgflight_operator;

-- Name: FUNCTION submit_runs(p_workspace text, p_runs jsonb, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.submit_runs(p_workspace text, p_runs jsonb, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.submit_runs(p_workspace text, p_runs jsonb, p_options jsonb) TO pgflight_operator;

-- Name: PROCEDURE sweep_loop(IN p_duration_s double precision, IN p_interval_s double precision); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON PROCEDURE pgflight.sweep_loop(IN p_duration_s double precision, IN p_interval_s double precision) FROM PUBLIC;
GRANT ALL ON PROCEDURE pgflight.sweep_loop(IN p_duration_s double precision, IN p_interval_s double precision) TO pgflight_cron;

-- Name: FUNCTION tool_policies(p_workspace text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.tool_policies(p_workspace text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.tool_policies(p_workspace text) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.tool_policies(p_workspace text) TO pgflight_operator;

-- Name: FUNCTION uninstall_schedules(); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.uninstall_schedules() FROM PUBLIC;

-- Name: FUNCTION unschedule_run(p_workspace text, p_name text); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.unschedule_run(p_workspace text, p_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.unschedule_run(p_workspace text, p_name text) TO pgflight_operator;

-- Name: FUNCTION unserved_recipes(p_recipes text[]); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.unserved_recipes(p_recipes text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.unserved_recipes(p_recipes text[]) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.unserved_recipes(p_recipes text[]) TO pgflight_operator;

-- Name: FUNCTION wait_event(p_attempt_id bigint, p_token bigint, p_wait_key text, p_name text, p_key text, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.wait_event(p_attempt_id bigint, p_token bigint, p_wait_key text, p_name text, p_key text, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.wait_event(p_attempt_id bigint, p_token bigint, p_wait_key text, p_name text, p_key text, p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION wait_timer(p_attempt_id bigint, p_token bigint, p_wait_key text, p_seconds double precision, p_options jsonb); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.wait_timer(p_attempt_id bigint, p_token bigint, p_wait_key text, p_seconds double precision, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.wait_timer(p_attempt_id bigint, p_token bigint, p_wait_key text, p_seconds double precision, p_options jsonb) TO pgflight_worker;

-- Name: FUNCTION wake_parents(p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.wake_parents(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.wake_parents(p_limit integer) TO pgflight_operator;

-- Name: FUNCTION wake_parked_keys(p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.wake_parked_keys(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.wake_parked_keys(p_limit integer) TO pgflight_operator;

-- Name: FUNCTION wake_ticket_key(p_key bigint); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.wake_ticket_key(p_key bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.wake_ticket_key(p_key bigint) TO pgflight_worker;
GRANT ALL ON FUNCTION pgflight.wake_ticket_key(p_key bigint) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.wake_ticket_key(p_key bigint) TO pgflight_reader;

-- Name: FUNCTION worker_list(p_limit integer); Type: ACL; Schema: pgflight; Owner: pgflight_owner

REVOKE ALL ON FUNCTION pgflight.worker_list(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.worker_list(p_limit integer) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.worker_list(p_limit integer) TO pgflight_operator;

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

-- Name: TABLE schedule_list; Type: ACL; Schema: pgflight; Owner: pgflight_owner

GRANT SELECT ON TABLE pgflight.schedule_list TO pgflight_reader;
GRANT SELECT ON TABLE pgflight.schedule_list TO pgflight_operator;

-- Name: TABLE workspace_flow; Type: ACL; Schema: pgflight; Owner: pgflight_owner

GRANT SELECT ON TABLE pgflight.workspace_flow TO pgflight_reader;
GRANT SELECT ON TABLE pgflight.workspace_flow TO pgflight_operator;
