-- Revert pgflight:functions/submit_runs@v0.9.0: restores the previous definition, deploy/functions/submit_runs@v0.6.0.sql (written by scripts/gen_sql_scripts.py)
-- requires: tables/settings_submit_cap internals/_options internals/_trust internals/_flow_options
--           internals/_events tables/step_attempts_flow functions/submit_run
begin;
set local role pgflight_owner;

-- Bulk submit (issue 18): what N calls of submit_run do, in one call and a few set-based
-- statements (the runs, their root steps and first attempts are each one INSERT; each run's queued
-- event is its attempt's queue_event_id, no events row).
-- p_runs is a JSON array of {"recipe": text, "input": json (default {}), "options": {...}}; each
-- element's options are submit_run's (docs/options.md) laid over p_options, the options shared by
-- every element (idempotency_key only per element).
-- All or nothing: one bad element refuses the whole call and writes nothing; the error is
-- submit_run's (22023 naming the key, ZF004, ZF005) with "submit_runs element N: " before its
-- message, N the element's 1-based position. Idempotency keys as in submit_run: a key that
-- exists gives its run (created false), the same key with another recipe or input is ZF004.
-- Inside one call the first element of a key creates the run and later elements of the key get
-- it (created false), or ZF004 when their recipe or input differs. Runs are inserted in key
-- order, so two calls submitting the same keys at once wait on each other in one order and never
-- deadlock; the one that waits gets the other's runs. Options are validated once per distinct
-- options object (the idempotency key set apart), not once per element.
-- The workspace lane is checked once; one NOTIFY per call when a run is claimable now.
-- Returns one row per element, in order: (idx, run_id, step_id, attempt_id, created).
-- Errors: 22023 bad argument, ZF003 unknown workspace, ZF004 idempotency conflict, ZF005 more
-- elements than settings.max_runs_per_call or an input over settings.max_input_bytes, ZF012 no
-- operator lane on the workspace.
create or replace function pgflight.submit_runs(p_workspace text, p_runs jsonb, p_options jsonb default '{}')
returns table (idx integer, run_id bigint, step_id bigint, attempt_id bigint, created boolean)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_now timestamptz := pgflight._now();
  v_ws bigint;
  v_ws_max_usd numeric;
  v_settings pgflight.settings;
  v_shared jsonb;
  v_bad record;
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
  select w.id, w.max_run_usd into v_ws, v_ws_max_usd from pgflight.workspaces w where w.name = p_workspace;
  if not found then
    raise exception using errcode = 'ZF003', message = format('unknown workspace %L', p_workspace),
      hint = 'Create it first: select pgflight.create_workspace(name).';
  end if;
  perform pgflight._require_lane('operator', v_ws, 'submit_runs');  -- once for the whole call
  v_shared := pgflight._check_options('submit_run', p_options);
  if v_shared ? 'idempotency_key' then
    raise exception using errcode = '22023', message = 'option idempotency_key of submit_runs is per run',
      detail = 'p_options holds the options every element shares; one key would name every run',
      hint = 'Put each run''s idempotency_key in its element''s options.';
  end if;
  if jsonb_array_length(p_runs) = 0 then
    return;
  end if;

  begin
    -- the first malformed element, in one pass: its shape, recipe, keys, input size, key
    select e.ord::integer as ord, e.value,
           case
             when jsonb_typeof(e.value) <> 'object' then 'shape'
             when jsonb_typeof(e.value -> 'recipe') is distinct from 'string' or btrim(e.value ->> 'recipe') = ''
               then 'recipe'
             when length(e.value ->> 'recipe') > 256 then 'recipe_long'
             when e.value - 'recipe' - 'input' - 'options' <> '{}' then 'keys'
             when jsonb_typeof(e.value -> 'options') not in ('object', 'null') then 'options'
             when jsonb_typeof(e.value -> 'options' -> 'idempotency_key') not in ('string', 'null')
                  or length(e.value -> 'options' ->> 'idempotency_key') not between 1 and 512 then 'key'
             when octet_length(coalesce(e.value -> 'input', '{}')::text) > v_settings.max_input_bytes then 'size'
           end as problem
      into v_bad
      from jsonb_array_elements(p_runs) with ordinality as e(value, ord)
     where jsonb_typeof(e.value) <> 'object'
        or jsonb_typeof(e.value -> 'recipe') is distinct from 'string' or btrim(e.value ->> 'recipe') = ''
        or length(e.value ->> 'recipe') > 256
        or e.value - 'recipe' - 'input' - 'options' <> '{}'
        or jsonb_typeof(e.value -> 'options') not in ('object', 'null')
        or jsonb_typeof(e.value -> 'options' -> 'idempotency_key') not in ('string', 'null')
        or length(e.value -> 'options' ->> 'idempotency_key') not between 1 and 512
        or octet_length(coalesce(e.value -> 'input', '{}')::text) > v_settings.max_input_bytes
     order by e.ord
     limit 1;
    if found then
      v_idx := v_bad.ord;
      case v_bad.problem
        when 'shape' then
          raise exception using errcode = '22023', message = 'a run must be a JSON object',
            detail = format('got %s', left(v_bad.value::text, 200)),
            hint = 'Each element is {"recipe": ..., "input": ..., "options": {...}}.';
        when 'recipe' then
          raise exception using errcode = '22023', message = 'recipe is required',
            detail = format('got %s', left(coalesce((v_bad.value -> 'recipe')::text, 'no recipe'), 200)),
            hint = 'Pass the name a worker registered with @recipe(...), as a JSON string.';
        when 'recipe_long' then
          raise exception using errcode = '22023', message = 'recipe name is longer than 256 characters',
            detail = format('got %s characters', length(v_bad.value ->> 'recipe')), hint = 'Use a short recipe name.';
        when 'keys' then
          raise exception using errcode = '22023',
            message = format('unknown key %s in a run', (select k from jsonb_object_keys(v_bad.value - 'recipe' - 'input' - 'options') k
                                                            order by k limit 1)),
            detail = 'known keys: input, options, recipe', hint = 'Check the spelling; options go inside "options".';
        when 'options' then
          raise exception using errcode = '22023', message = 'options of submit_run must be a JSON object',
            detail = format('got a JSON %s', jsonb_typeof(v_bad.value -> 'options')),
            hint = 'See docs/options.md for the keys each function takes.';
        when 'key' then
          perform pgflight._bad_option('submit_run', 'idempotency_key', v_bad.value -> 'options' -> 'idempotency_key',
                                       'a JSON string of 1 to 512 characters');
        else
          perform pgflight._require_cap('max_input_bytes', v_settings.max_input_bytes,
                                        octet_length(coalesce(v_bad.value -> 'input', '{}')::text), 'input (bytes)');
      end case;
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
      -- the flow options (issue 15) read by the same helpers as submit_run
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

  -- The writes. Every id is drawn first, per element, into arrays (a key's first element creates
  -- its run, later ones read it afterwards); then one INSERT per table reads the arrays side by
  -- side, with no join between the inserted rows.
  select array_agg(p.i order by p.i), array_agg(p.recipe order by p.i), array_agg(p.input order by p.i),
         array_agg(p.key order by p.i), array_agg(p.g order by p.i), array_agg(p.hash order by p.i),
         array_agg(nextval('pgflight.runs_id_seq'::regclass) order by p.i),
         array_agg(nextval('pgflight.steps_id_seq'::regclass) order by p.i),
         array_agg(nextval('pgflight.step_attempts_id_seq'::regclass) order by p.i)
    into v_i, v_recipe, v_input, v_key, v_g, v_hash, v_run_ids, v_step_ids, v_attempt_ids
    from (select e.ord::integer as i, e.value ->> 'recipe' as recipe, coalesce(e.value -> 'input', '{}') as input,
                 e.value -> 'options' ->> 'idempotency_key' as key,
                 dense_rank() over (order by v_shared || coalesce(nullif(e.value -> 'options', 'null'), '{}')
                                             - 'idempotency_key')::integer as g,
                 encode(sha256(convert_to(coalesce(e.value -> 'input', '{}')::text, 'UTF8')), 'hex') as hash,
                 row_number() over (partition by e.value -> 'options' ->> 'idempotency_key' order by e.ord) as nth
            from jsonb_array_elements(p_runs) with ordinality as e(value, ord)) p
   where p.key is null or p.nth = 1;

  -- runs in key order (see above); a key another transaction holds makes this wait for it. Issue
  -- 18: keyless runs are a plain INSERT (nothing can conflict: no speculative insertion), the
  -- keyed ones go through ON CONFLICT against the partial index (tables/runs_idempotency_partial).
  with src as (
    select u.run_id as id, v_ws as workspace_id, u.recipe, u.key as idempotency_key, u.hash as input_hash,
           coalesce(v_norm[u.g] ->> 'submitted_by', session_user::text) as submitted_by,
           -- the run's options as submit_run keeps them, its key included
           case when u.key is null then v_norm[u.g] else v_norm[u.g] || jsonb_build_object('idempotency_key', u.key) end
             as options,
           coalesce((v_norm[u.g] ->> 'max_usd')::numeric, v_ws_max_usd) as max_usd,
           (v_norm[u.g] ->> 'max_wall_s')::double precision as max_wall_s,
           (v_norm[u.g] ->> 'max_iterations')::integer as max_iterations,
           (v_norm[u.g] ->> 'max_tool_calls')::integer as max_tool_calls,
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
    select u.step_id, u.run_id, null, 0, 'root', u.recipe, u.input,
           coalesce((v_norm[u.g] ->> 'priority')::integer, 0),
           coalesce((v_norm[u.g] ->> 'max_attempts')::integer, v_settings.default_max_attempts),
           coalesce(v_norm[u.g] -> 'backoff', '{}'),
           (v_norm[u.g] ->> 'lease_s')::double precision, (v_norm[u.g] ->> 'max_runtime_s')::double precision, v_now,
           v_norm[u.g] ->> 'concurrency_key',
           case when v_norm[u.g] ? 'concurrency_key' then coalesce((v_norm[u.g] ->> 'concurrency_limit')::integer, 1) end
      from unnest(v_run_ids, v_step_ids, v_recipe, v_input, v_g) as u(run_id, step_id, recipe, input, g)
  )
  -- each run's queued event is its attempt's queue_event_id, shown by run_events (issue 18: no
  -- events row), drawn in the runs' order (the order unnest reads them)
  insert into pgflight.step_attempts (id, step_id, run_id, attempt_no, recipe, priority, status, available_after,
                                      created_at, workspace_id, concurrency_key, concurrency_limit, queue_event_id)
  overriding system value
  select u.attempt_id, u.step_id, u.run_id, 1, u.recipe, coalesce((v_norm[u.g] ->> 'priority')::integer, 0),
         'queued', v_start[u.g], v_now, v_ws,
         v_norm[u.g] ->> 'concurrency_key',
         case when v_norm[u.g] ? 'concurrency_key' then coalesce((v_norm[u.g] ->> 'concurrency_limit')::integer, 1) end,
         nextval('pgflight.events_id_seq')
    from unnest(v_run_ids, v_step_ids, v_attempt_ids, v_recipe, v_g) as u(run_id, step_id, attempt_id, recipe, g);
  v_created := v_i;
  select coalesce(bool_or(v_start[g] <= v_now), false) into v_ready from unnest(v_g) as g;

  if coalesce(cardinality(v_created), 0) < jsonb_array_length(p_runs) then
    -- every element that created nothing: a key seen before (in the database, or earlier in this
    -- call), or one that another transaction created first (ON CONFLICT waited for it to commit)
    select e.ord::integer as ord, r.id, r.recipe, r.input_hash,
           e.value ->> 'recipe' as recipe_now,
           encode(sha256(convert_to(coalesce(e.value -> 'input', '{}')::text, 'UTF8')), 'hex') as hash_now,
           (select min(f.ord) from jsonb_array_elements(p_runs) with ordinality as f(value, ord)
             where f.value -> 'options' ->> 'idempotency_key' = r.idempotency_key)::integer as first_ord
      into v_bad
      from jsonb_array_elements(p_runs) with ordinality as e(value, ord)
      join pgflight.runs r on r.workspace_id = v_ws and r.idempotency_key = e.value -> 'options' ->> 'idempotency_key'
     where not exists (select from unnest(v_created) c(i) where c.i = e.ord)
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
                        case when v_bad.first_ord < v_bad.ord and v_bad.first_ord = any (v_created)
                             then format(' (created by element %s of this call)', v_bad.first_ord) else '' end,
                        v_bad.ord, v_bad.recipe_now, v_bad.hash_now),
        hint = 'Use a new idempotency key for a different job, or resubmit the original input.';
    end if;
  end if;

  if v_ready then
    perform pgflight._notify_ready();  -- one per call
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
comment on function pgflight.submit_runs(text, jsonb, jsonb) is
  'Bulk submit: p_runs a JSON array of {recipe, input, options}; each element as submit_run, options laid '
  'over the shared p_options (not idempotency_key). All or nothing: a bad element refuses the call, the '
  'error prefixed "submit_runs element N: ". Returns (idx, run_id, step_id, attempt_id, created) per element. '
  'Errors: 22023, ZF003, ZF004 idempotency conflict (also between two elements), ZF005 over '
  'settings.max_runs_per_call or max_input_bytes, ZF012.';
grant execute on function pgflight.submit_runs(text, jsonb, jsonb) to pgflight_operator;

commit;
