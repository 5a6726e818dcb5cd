-- Deploy pgflight:functions/submit_run
begin;
set local role pgflight_owner;

-- Submit a run: one root step of p_recipe with p_input, queued.
-- options (all optional): idempotency_key (same key -> the same run; same key with another input
-- -> ZF004), priority (integer, higher first), max_attempts, backoff {base_s, factor, max_s,
-- jitter}, not_before (timestamptz: not claimable before), lease_s and max_runtime_s (seconds),
-- max_usd (USD), max_wall_s (seconds), max_iterations, max_tool_calls (tree budgets), submitted_by.
-- Returns the run, its root step and first attempt, and whether this call created them.
-- Errors: 22023 bad argument, ZF003 unknown workspace, ZF004 idempotency conflict, ZF005 input
-- over settings.max_input_bytes. Concurrent submits of one key are serialised by the unique
-- constraint: exactly one creates, the others read its row.
create or replace function pgflight.submit_run(p_workspace text, p_recipe text, p_input jsonb, p_options jsonb default '{}')
returns table (run_id bigint, step_id bigint, attempt_id bigint, created boolean)
language plpgsql volatile security definer
set search_path = ''
as $$
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
comment on function pgflight.submit_run(text, text, jsonb, jsonb) is
  'Submit a run (root step of a recipe). Returns (run_id, step_id, attempt_id, created). '
  'Errors: 22023, ZF003 unknown workspace, ZF004 idempotency conflict, ZF005 input too large.';
grant execute on function pgflight.submit_run(text, text, jsonb, jsonb) to pgflight_operator;

commit;
