-- Deploy pgflight:internals/_options
-- Defines: _option_spec(), _option_map(), _bad_option(), _opt_bool(), _opt_int(), _opt_number(), _opt_interval(),
-- _opt_string(), _check_options(), _check_arg(), _opt_clamped(), _opt_num(), _opt_text(),
-- _require_positive(), _backoff_s(), _bad_child_options(), _check_limit(), _limit().
-- Option parsing in one place (issue 12, issue 14 case 7): the catalogue of every option of every
-- API function (_option_spec: the single source of validation and of docs/options.md), the
-- typed readers with bounds, the one validator every API function runs on its options, and the
-- backoff policy, which saturates at its cap for any attempt number.
-- None is granted to any role.
begin;
set local role pgflight_owner;

-- The engine's hard limits: the largest value any time option may take, so that nothing computed
-- from a stored option later (a lease, a deadline, a retry delay) can leave timestamptz's range.
-- Claims and sweeps clamp to these as well, for rows written before the options were checked.
create or replace function pgflight._limit(p_name text)
returns double precision
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
  select case p_name
    when 'lease_s' then 604800         -- 7 days
    when 'runtime_s' then 31536000     -- 365 days
    when 'delay_s' then 2592000        -- 30 days: a retry delay, a backoff cap
    when 'usd' then 1000000000         -- a billion USD
  end::double precision
$$;
comment on function pgflight._limit(text) is
  'Internal: the hard maximum of a kind of option (lease_s, runtime_s, delay_s, usd).';

-- Every option of every API function: its scope (the function; "step" is the step options that
-- submit_run takes and every child of spawn_children takes; "backoff" the keys of the backoff
-- object), kind (boolean, integer, number, string, timestamptz, string[], backoff, enum, json: any
-- JSON value, its size and depth checked by the function that takes it), the
-- inclusive bounds (for a string or string[]: its length in characters / items), the default and
-- one line of documentation. scripts/gen_options_doc writes docs/options.md from this, and
-- _check_options validates against it: a key absent here is refused.
create or replace function pgflight._option_spec()
returns table (scope text, key text, kind text, min_value numeric, max_value numeric, choices text[],
               default_value text, doc text)
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
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
     'At most concurrency_limit attempts of the workspace''s steps with this key are leased at once (issue 15).'),
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
comment on function pgflight._option_spec() is
  'Internal: the catalogue of every API option (scope, key, kind, bounds, default, doc); the single '
  'source of _check_options and docs/options.md.';

-- The catalogue as one jsonb object, "scope.key" -> {"kind", "min", "max", "choices"}, for the
-- validator (issue 18). Immutable without arguments: a caller's cached plan folds the call into a
-- constant, so the catalogue is built once per session and each key is one lookup. Before,
-- _check_options ran _option_spec's VALUES list once per key (a SQL function with a SET clause is
-- planned anew at every call): 80 % of submit_run's time with options.
create or replace function pgflight._option_map()
returns jsonb
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
  select jsonb_object_agg(s.scope || '.' || s.key,
                          jsonb_build_object('kind', s.kind, 'min', s.min_value, 'max', s.max_value,
                                             'choices', s.choices))
    from pgflight._option_spec() s
$$;
comment on function pgflight._option_map() is
  'Internal: _option_spec as one jsonb object keyed "scope.key", folded into a constant by its callers'' plans.';

-- Raise 22023 for option p_key of p_scope: the message names the key, DETAIL the value and the
-- bounds, HINT the documented range.
create or replace function pgflight._bad_option(p_scope text, p_key text, p_value jsonb, p_expected text)
returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
  raise exception using
    errcode = '22023',
    message = format('option %s of %s must be %s', p_key, p_scope, p_expected),
    detail  = format('got %s', left(coalesce(p_value::text, 'NULL'), 200)),
    hint    = format('See docs/options.md: %s.%s is %s.', p_scope, p_key, p_expected);
end
$$;
comment on function pgflight._bad_option(text, text, jsonb, text) is
  'Internal: raise 22023 naming the option, its value (DETAIL) and its documented range (HINT).';

-- The typed readers. Absent or JSON null gives p_default; anything else is checked: its JSON
-- type, and for numbers the bounds, compared as numeric so that 1e300 or 1e400 is refused (never
-- cast to a double that overflows). One rule for integers everywhere: a JSON number with an
-- integral value, so 3 and 3.0 are both 3, and 1.5 is refused (never rounded).
create or replace function pgflight._opt_bool(p_options jsonb, p_key text, p_default boolean, p_scope text default 'options')
returns boolean
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
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

create or replace function pgflight._opt_number(p_options jsonb, p_key text, p_default double precision,
                                                 p_min numeric, p_max numeric, p_scope text default 'options')
returns double precision
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
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

create or replace function pgflight._opt_int(p_options jsonb, p_key text, p_default bigint,
                                              p_min numeric, p_max numeric, p_scope text default 'options')
returns bigint
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
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

create or replace function pgflight._opt_interval(p_options jsonb, p_key text, p_default_s double precision,
                                                   p_min_s numeric, p_max_s numeric, p_scope text default 'options')
returns interval
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
  select make_interval(secs => pgflight._opt_number(p_options, p_key, p_default_s, p_min_s, p_max_s, p_scope))
$$;

create or replace function pgflight._opt_string(p_options jsonb, p_key text, p_default text,
                                                 p_min_len integer, p_max_len integer, p_scope text default 'options')
returns text
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight._opt_bool(jsonb, text, boolean, text) is 'Internal: a boolean option or 22023 naming the key.';
comment on function pgflight._opt_number(jsonb, text, double precision, numeric, numeric, text) is
  'Internal: a number option within [min, max] or 22023 naming the key, the value and the bounds.';
comment on function pgflight._opt_int(jsonb, text, bigint, numeric, numeric, text) is
  'Internal: an integer option (3 or 3.0) within [min, max] or 22023 naming the key, the value and the bounds.';
comment on function pgflight._opt_interval(jsonb, text, double precision, numeric, numeric, text) is
  'Internal: a seconds option within [min, max] as an interval, or 22023.';
comment on function pgflight._opt_string(jsonb, text, text, integer, integer, text) is
  'Internal: a string option of bounded length or 22023 naming the key.';

-- The one validator: every API function with options calls it first. NULL is '{}'; a non-object,
-- an unknown key or a value outside its spec raises 22023 naming the key. Returns the options
-- normalised (JSON nulls dropped, integers written 3.0 stored as 3), which the caller then reads
-- with plain casts: nothing read from the result can fail.
-- Issue 18: one query pairs every key with its spec (the inlined VALUES list, read once per call),
-- and each check is written here inline, with no function call per key; the typed readers above
-- raise the same errors, and _bad_option is called only to raise.
create or replace function pgflight._check_options(p_scope text, p_options jsonb)
returns jsonb
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function pgflight._check_options(text, jsonb) is
  'Internal: validate an options object against _option_spec for this scope (22023 naming the key) '
  'and return it normalised.';

-- A scalar argument with bounds (lease_s, batch_size …): 22023 naming it when NULL, NaN, infinite
-- or outside [min, max].
create or replace function pgflight._check_arg(p_name text, p_value double precision, p_min double precision, p_max double precision)
returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight._check_arg(text, double precision, double precision, double precision) is
  'Internal: 22023 unless the argument is a number within [min, max].';

-- A row limit argument (sweeps, paged reads): NULL or 0 to 2^31-1, else 22023 (a negative
-- LIMIT would raise 2201W inside the function). Returns it, for use in LIMIT.
create or replace function pgflight._check_limit(p_limit integer)
returns integer
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
  if p_limit < 0 then
    perform pgflight._check_arg('limit', p_limit, 0, 2147483647);
  end if;
  return p_limit;
end
$$;
comment on function pgflight._check_limit(integer) is 'Internal: a row limit, NULL or >= 0, else 22023.';

-- For reading stored options in a sweep or a claim: never raises. A JSON number is clamped into
-- [min, max]; anything else (a string "5" stored before options were checked) gives the default.
create or replace function pgflight._opt_clamped(p_options jsonb, p_key text, p_default double precision,
                                                  p_min numeric, p_max numeric)
returns double precision
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
  select case when jsonb_typeof(p_options) = 'object' and jsonb_typeof(p_options -> p_key) = 'number'
              then least(greatest((p_options -> p_key)::numeric, p_min), p_max)::double precision
              else p_default end
$$;
comment on function pgflight._opt_clamped(jsonb, text, double precision, numeric, numeric) is
  'Internal: a stored number option clamped into [min, max], the default when it is not a number; never raises.';

-- Kept for the functions not yet reworked (their options are read after _check_options or are
-- agent-internal): a numeric option or its default; 22023 when not a JSON number or out of the
-- double range.
create or replace function pgflight._opt_num(p_options jsonb, p_key text, p_default double precision)
returns double precision
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
  select pgflight._opt_number(p_options, p_key, p_default, -1e15, 1e15)
$$;
comment on function pgflight._opt_num(jsonb, text, double precision) is
  'Internal: a numeric option within +/-1e15 or its default; 22023 otherwise.';

create or replace function pgflight._opt_text(p_options jsonb, p_key text, p_default text)
returns text
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
  select pgflight._opt_string(p_options, p_key, p_default, 0, 16777216)
$$;
comment on function pgflight._opt_text(jsonb, text, text) is
  'Internal: a string option or its default; 22023 when the value is not a JSON string.';

-- Raise 22023 for a missing, non-positive or non-finite argument.
create or replace function pgflight._require_positive(p_name text, p_value double precision)
returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight._require_positive(text, double precision) is
  'Internal: 22023 unless the value is a finite number above zero.';

-- Seconds to wait before retry number p_failed (1-based): min(max_s, base_s * factor^(n-1)),
-- times 1 +/- jitter. Saturates at max_s for ANY attempt number (issue 14 case 1: 2^1024 used to
-- overflow before the cap): the comparison with the cap is made in log space, and the power is
-- computed only when it is below the cap. Never raises: the stored backoff is read clamped (a
-- string or an out-of-range number written before the options were checked falls back to the
-- default or the bound), and the result is within [0, _limit('delay_s')].
create or replace function pgflight._backoff_s(p_failed integer, p_backoff jsonb)
returns double precision
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight._backoff_s(integer, jsonb) is
  'Internal: retry delay in seconds, min(max_s, base_s * factor^(n-1)) times 1 +/- jitter; saturates, never raises.';

-- Kept for callers of the released definition: true when a child's options are malformed.
create or replace function pgflight._bad_child_options(p_options jsonb)
returns boolean
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
  perform pgflight._check_options('spawn_children child', p_options);
  return false;
exception when sqlstate '22023' then
  return true;
end
$$;
comment on function pgflight._bad_child_options(jsonb) is
  'Internal: true when a child''s options object fails _check_options.';

commit;
