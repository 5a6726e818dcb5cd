-- Deploy pgflight:functions/fork_agent
begin;
set local role pgflight_owner;

-- fork_agent reads in sections; four have a name of their own: the patch's checks, the checks of
-- the patched tool results against the original, the fork's budgets and the copy of the reused
-- iterations. None is granted to a lane: they run as the owner, inside fork_agent.

-- The patch of a fork, checked: at most settings.max_input_bytes (ZF005) and max_json_depth deep
-- (ZF005), its keys and values by the option spec (scope fork_agent, 22023 naming the key), and
-- each tool_results value a string or an array of content blocks (22023). Returns the normalised
-- patch ({} for NULL).
create or replace function pgflight._fork_agent_patch(p_patch jsonb, p_max_input_bytes bigint)
returns jsonb
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight._fork_agent_patch(jsonb, bigint) is
  'Internal (fork_agent): the patch checked (size and depth ZF005, keys and values 22023) and normalised.';

-- The patched tool results of a fork against iteration p_iteration (k-1) of the original agent
-- run: every patched result names a tool call of that iteration (the calls iteration k is told
-- about; 22023 listing them otherwise), and every other tool call of it has its result on record
-- (ZF006: in flight or never run).
create or replace function pgflight._fork_agent_require_results(p_agent_run_id bigint, p_iteration integer,
                                                                 p_results jsonb)
returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight._fork_agent_require_results(bigint, integer, jsonb) is
  'Internal (fork_agent): 22023 a patched result that is no tool call of the iteration, ZF006 a call of it '
  'with no recorded result and none patched.';

-- The budgets of a fork, as begin_agent_run makes them for a root agent: the run's (the
-- workspace's max_run_usd) and the agent step's (its max_usd, USD, and max_wall_s, seconds), each
-- only when it has a cap. Returns their ids, run first.
create or replace function pgflight._fork_agent_budgets(p_workspace_id bigint, p_run_id bigint, p_step_id bigint,
                                                        p_max_run_usd numeric, p_max_usd numeric,
                                                        p_max_wall_s double precision, p_now timestamptz)
returns bigint[]
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight._fork_agent_budgets(bigint, bigint, bigint, numeric, numeric, double precision, timestamptz) is
  'Internal (fork_agent): the fork''s run budget (max_run_usd) and agent step budget (max_usd USD, max_wall_s '
  'seconds), each when capped; returns their ids.';

-- The reused iterations 0 .. p_at_iteration - 1 of agent run p_from_agent_run_id, copied into the
-- fork's agent run p_agent_run_id: the task, each response and the results the next call was
-- sent (completed rows; a patched result, p_results by tool_use id, replaces the recorded one, or
-- is written at the seq the loop would have used when none is on record); system blocks stay with
-- the original; and one costs row per reused iteration at USD 0, marked reused.
create or replace function pgflight._fork_agent_copy_iterations(p_from_agent_run_id bigint, p_at_iteration integer,
                                                                 p_results jsonb, p_agent_run_id bigint,
                                                                 p_step_id bigint, p_run_id bigint,
                                                                 p_workspace_id bigint, p_now timestamptz)
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight._fork_agent_copy_iterations(bigint, integer, jsonb, bigint, bigint, bigint, bigint, timestamptz) is
  'Internal (fork_agent): copy the reused iterations (traces, patched results, costs at USD 0) into the fork''s '
  'agent run.';

-- Fork the agent of step p_step_id at iteration k = p_at_iteration: a new run (same workspace and
-- recipe) whose root step's input is the original's with the patch laid over it, and whose agent
-- run already holds the original's iterations 0 .. k-1 (the task, each model response and the tool
-- results fed to the next call: copies of the traces, with a costs row per iteration at USD 0 marked
-- reused). A worker that claims the fork resumes it as any agent: it asks the model for iteration k
-- onwards, with the patched system prompt, model, tools and caps. The original is not touched.
-- p_patch (docs/options.md, scope fork_agent): system, model, provider, tools, max_tokens,
-- max_iterations, max_tool_calls, max_usd, max_wall_s, and tool_results {tool_use id: a string or an
-- array of content blocks} replacing the results of iteration k-1's tool calls (the ones iteration k
-- is sent). The fork has its own budget: its agent's max_usd / max_wall_s (the patch's, else the
-- original agent's), and the workspace's max_run_usd for its run; the reused iterations cost 0 and
-- count toward max_iterations and max_tool_calls. Audited: an events row on the fork ('forked', the
-- reason, the origin, the iteration and the patched keys) and one on the original step.
-- Errors: 22023 a NULL or bad argument (an unknown patch key, a tool_results id that is not a tool
-- call of iteration k-1, k outside 1 .. the iterations recorded, no reason); ZF005 a patch or a
-- patched input over settings.max_input_bytes or nested deeper than settings.max_json_depth; ZF003
-- unknown step (also a step of a workspace the login has no grant on); ZF006 the step has no agent run, its input is not a JSON object, or a tool call of
-- iteration k-1 has no completed result and none in the patch; ZF012 no operator grant on a
-- workspace where the login has another lane.
-- Sections: the arguments and the patch (_fork_agent_patch); the lane, the original's rows and the
-- patched results against them (_fork_agent_require_results); the patched input; the fork's run,
-- root step and attempt; its budgets (_fork_agent_budgets); its agent run; the reused iterations
-- (_fork_agent_copy_iterations); the audit.
-- Locking: the original's run row FOR KEY SHARE (as replay_from, against a purge), then its agent
-- run FOR SHARE (a live attempt of the original may record more meanwhile; what is read is what
-- was recorded, completed rows only); everything else written is new.
create or replace function pgflight.fork_agent(p_step_id bigint, p_at_iteration integer, p_patch jsonb,
                                               p_reason text)
returns table (run_id bigint, step_id bigint, attempt_id bigint, agent_run_id bigint)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight.fork_agent(bigint, integer, jsonb, text) is
  'Fork an agent at iteration k (1 .. its iterations): a new run whose agent reuses iterations 0 .. k-1 at USD 0 '
  'and asks the model from k on with the patch (docs/options.md, scope fork_agent: system, model, provider, tools, '
  'max_tokens, max_iterations, max_tool_calls, max_usd (USD), max_wall_s (seconds), tool_results {tool_use id: '
  'string or content blocks}); its own budget; audited in the events log with the reason. Returns (run_id, step_id, '
  'attempt_id, agent_run_id). Errors: 22023, ZF003, ZF005, ZF006, ZF012.';
revoke execute on function pgflight.fork_agent(bigint, integer, jsonb, text) from public;
grant execute on function pgflight.fork_agent(bigint, integer, jsonb, text) to pgflight_operator;

commit;
