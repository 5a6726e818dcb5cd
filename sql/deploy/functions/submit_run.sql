-- Deploy pgflight:functions/submit_run

begin;

set local role pgflight_owner;

-- Submit a run: one root step of p_recipe with p_input, queued.
-- options (all optional): idempotency_key (same key -> the same run; same key with another input
-- -> ZF004), priority (integer, higher first), max_attempts, backoff {base_s, factor, max_s,
-- jitter}, not_before (timestamp with a UTC offset: not claimable before) or delay_s (seconds from
-- now, on the server's clock), concurrency_key and concurrency_limit (at most that many attempts
-- of the workspace's steps with this key leased at once; default 1), lease_s and max_runtime_s (seconds),
-- max_usd (USD), max_wall_s (seconds), max_iterations, max_tool_calls (tree budgets), submitted_by.
-- Returns the run, its root step and first attempt, and whether this call created them.
-- Errors: 22023 bad argument, ZF003 unknown workspace, ZF004 idempotency conflict, ZF005 input
-- over settings.max_input_bytes or nested deeper than settings.max_json_depth. Concurrent submits of one key are serialised by the unique
-- constraint: exactly one creates, the others read its row.
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

COMMENT ON FUNCTION pgflight.submit_run(p_workspace text, p_recipe text, p_input jsonb, p_options jsonb) IS 'Submit a run (root step of a recipe). Returns (run_id, step_id, attempt_id, created). Options (docs/options.md): idempotency_key, priority, max_attempts, lease_s, max_runtime_s, backoff {base_s, factor, max_s, jitter}, not_before (with a UTC offset) or delay_s, concurrency_key and concurrency_limit, max_usd, max_wall_s, max_iterations, max_tool_calls, submitted_by, traceparent (W3C trace context); an unknown key or a value out of bounds is 22023 naming it. Errors: 22023, ZF003 unknown workspace, ZF004 idempotency conflict, ZF005 input too large.';

REVOKE ALL ON FUNCTION pgflight.submit_run(p_workspace text, p_recipe text, p_input jsonb, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.submit_run(p_workspace text, p_recipe text, p_input jsonb, p_options jsonb) TO pgflight_operator;

commit;
