-- Deploy pgflight:functions/submit_runs
-- requires: tables/settings_submit_cap internals/_options internals/_trust internals/_flow_options
--           internals/_events tables/step_attempts_flow functions/submit_run roles/owner_sets_replication_role internals/_row_triggers
begin;
set local role pgflight_owner;

-- submit_runs reads in sections; the four below have a name of their own. None is granted to a
-- lane: they run as the owner, inside submit_runs.

-- The workspace of a submit_runs call and its lane, checked once for the whole call: its id and
-- max_run_usd. The row is locked FOR KEY SHARE, the lock each run's foreign key check takes
-- (submit_runs writes with those checks off for a large call). One answer (ZF003) for a name
-- unknown and one the login sees nothing of; ZF012 only where the login reads and is no operator.
-- The common case costs the one _may probe.
create or replace function pgflight._submit_runs_workspace(p_workspace text, out id bigint, out max_run_usd numeric)
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight._submit_runs_workspace(text) is
  'Internal (submit_runs): the workspace by name, FOR KEY SHARE, with its max_run_usd; ZF003 unknown or '
  'unseen, ZF012 no operator lane.';

-- The depth cap of a submit_runs call's inputs: one pass over the whole call (an input sits two
-- levels down, [{"input": ...}]); the element is looked for only to name it in the ZF005. A deep
-- element or options object that is not an input is left to the element checks (22023).
create or replace function pgflight._submit_runs_require_depth(p_runs jsonb, p_max_depth integer)
returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight._submit_runs_require_depth(jsonb, integer) is
  'Internal (submit_runs): ZF005 naming the first run whose input nests deeper than p_max_depth.';

-- What is wrong with a malformed element of submit_runs (found by submit_runs' one pass over the
-- call), raised: the checks in the order of that pass: its shape, recipe, recipe length, keys,
-- options, idempotency key, input size. submit_runs puts "submit_runs element N: " before the
-- message. Always raises (22023, or ZF005 for the input size).
create or replace function pgflight._submit_runs_refuse_element(p_element jsonb, p_max_input_bytes bigint)
returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight._submit_runs_refuse_element(jsonb, bigint) is
  'Internal (submit_runs): raises what is wrong with a malformed element (22023 naming it, ZF005 input size).';

-- The idempotency conflict of a submit_runs call, raised (ZF004): the first element that created
-- nothing (p_created: the elements that did) whose key names a run of another recipe or input: a
-- key seen before (in the database, or earlier in this call), or one that another transaction
-- created first (ON CONFLICT waited for it to commit). Returns when there is none.
create or replace function pgflight._submit_runs_refuse_conflict(p_runs jsonb, p_workspace_id bigint, p_created integer[])
returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight._submit_runs_refuse_conflict(jsonb, bigint, integer[]) is
  'Internal (submit_runs): ZF004 for the first element whose idempotency key names a run of another '
  'recipe or input; nothing otherwise.';

-- Bulk submit: what N calls of submit_run do, in one call and a few set-based
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
-- The common bulk shape, every element with the same options and no key,
-- is read in one pass with no sort (the window functions that group elements by options and keys
-- run only when an element has its own options or a key), each option is read once per options
-- object rather than once per row, and the rows come back in element order without a sort.
-- Returns one row per element, in order: (idx, run_id, step_id, attempt_id, created).
-- Sections: the workspace and its lane (_submit_runs_workspace); the shared options and the depth
-- cap (_submit_runs_require_depth); the elements, checked in one pass (_submit_runs_refuse_element
-- says what is wrong with the first bad one); the options groups, each checked once; each group's
-- options read once; the ids drawn per element; the writes (one statement for the common shape,
-- keyed runs through ON CONFLICT otherwise); idempotency conflicts (_submit_runs_refuse_conflict);
-- the wake-up and the rows returned.
-- Errors: 22023 bad argument, ZF003 unknown workspace, ZF004 idempotency conflict, ZF005 more
-- elements than settings.max_runs_per_call, an input over settings.max_input_bytes or nested
-- deeper than settings.max_json_depth, ZF012 no operator lane on the workspace.
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
comment on function pgflight.submit_runs(text, jsonb, jsonb) is
  'Bulk submit: p_runs a JSON array of {recipe, input, options}; each element as submit_run, options laid '
  'over the shared p_options (not idempotency_key). All or nothing: a bad element refuses the call, the '
  'error prefixed "submit_runs element N: ". Returns (idx, run_id, step_id, attempt_id, created) per element. '
  'Errors: 22023, ZF003, ZF004 idempotency conflict (also between two elements), ZF005 over '
  'settings.max_runs_per_call or max_input_bytes, ZF012.';
grant execute on function pgflight.submit_runs(text, jsonb, jsonb) to pgflight_operator;

commit;
