-- tables/agent_write_checks: the CHECK constraints of traces, costs, agent_runs and
-- budgets are stored without ARRAY[..] constructors or casts (PostgreSQL 15 parses, folds and
-- compiles every check at each statement that writes the table; each constructor and cast was
-- evaluated again by the planner), and each still refuses exactly the rows it refused, under its
-- own name (23514).
begin;
\ir ../_helpers.psql
select plan(31);

select is((select count(*)::integer from pg_catalog.pg_constraint c join pg_catalog.pg_class t on t.oid = c.conrelid
            join pg_catalog.pg_namespace n on n.oid = t.relnamespace
           where n.nspname = 'pgflight' and c.contype = 'c'
             and (t.relname in ('traces', 'costs', 'agent_runs', 'budgets') or t.relname like 'traces\_%'
                  or t.relname like 'costs\_%')
             and (c.conbin::text like '%{ARRAYEXPR %' or c.conbin::text like '%{FUNCEXPR %')),
          0, 'no check of traces, costs, agent_runs, budgets or a partition holds an ARRAY[..] constructor or a cast');

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id from pgflight.begin_agent_run(:attempt_id, :token, '{"model": "claude-haiku-4-5", "task": "t"}') \gset

create function pgflight_test.trace(p_role text, p_block text, p_status text, p_tool text, p_iteration integer, p_seq integer)
returns void language sql as $$
  insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, status)
  select r.id, p_iteration, p_seq, p_role, p_block, p_tool, p_status from pgflight.agent_runs r
$$;
create function pgflight_test.cost(p_in bigint, p_out bigint, p_cw bigint, p_cr bigint, p_usd numeric, p_iteration integer)
returns void language sql as $$
  insert into pgflight.costs (agent_run_id, iteration, step_id, run_id, workspace_id, model, input_tokens, output_tokens,
                              cache_creation_tokens, cache_read_tokens, usd)
  select r.id, p_iteration, r.step_id, r.run_id, r.workspace_id, 'm', p_in, p_out, p_cw, p_cr, p_usd from pgflight.agent_runs r
$$;

-- every name each list allows, and a tool block with its id, is accepted
select lives_ok($$select pgflight_test.trace(r, 'text', 'completed', null, 5, n::integer)
                    from unnest(array['user', 'assistant', 'system']) with ordinality u(r, n)$$, 'every known role');
select lives_ok($$select pgflight_test.trace('user', b, s, 'x' || n, 6, n::integer)
                    from unnest(array['thinking', 'text', 'tool_use', 'tool_result', 'api_error'],
                                array['completed', 'in_flight', 'interrupted', 'completed', 'completed']) with ordinality u(b, s, n)$$,
                'every known block type and status');
select lives_ok($$select pgflight_test.trace('user', 'text', 'completed', null, 0, 5)$$, 'iteration 0');

select throws_like($$select pgflight_test.trace('tool', 'text', 'completed', null, 7, 0)$$,
                   '%violates check constraint "role_is_known"', 'an unknown role');
select throws_ok($$select pgflight_test.trace('User', 'text', 'completed', null, 7, 0)$$, '23514', null,
                 'a role in the wrong case');
select throws_like($$select pgflight_test.trace('user', '', 'completed', null, 7, 0)$$,
                   '%violates check constraint "block_type_is_a_name"', 'an empty block type');
select throws_like($$select pgflight_test.trace('user', 'text', 'done', null, 7, 0)$$,
                   '%violates check constraint "status_is_known"', 'an unknown status');
select throws_like($$select pgflight_test.trace('user', 'tool_use', 'completed', null, 7, 0)$$,
                   '%violates check constraint "tool_blocks_name_their_call"', 'a tool_use without an id');
select throws_ok($$select pgflight_test.trace('user', 'tool_result', 'completed', null, 7, 1)$$, '23514', null,
                 'a tool_result without an id');
select throws_like($$select pgflight_test.trace('user', 'text', 'completed', null, -1, 0)$$,
                   '%violates check constraint "iteration_is_not_negative"', 'a negative iteration');
select throws_ok($$select pgflight_test.trace('user', 'text', 'completed', null, 7, -1)$$, '23514', null, 'a negative seq');

select lives_ok($$select pgflight_test.cost(0, 0, 0, 0, 0, 1)$$, 'a call of no tokens and no cost');
select throws_like($$select pgflight_test.cost(-1, 0, 0, 0, 0, 2)$$,
                   '%violates check constraint "tokens_are_not_negative"', 'negative input tokens');
select throws_ok($$select pgflight_test.cost(0, 0, 0, -1, 0, 2)$$, '23514', null,
                 'negative cache read tokens (the last of the four)');
select throws_like($$select pgflight_test.cost(0, 0, 0, 0, -0.01, 2)$$,
                   '%violates check constraint "usd_is_not_negative"', 'a negative cost');

select throws_like(format('update pgflight.agent_runs set tool_calls = -1 where id = %s', :agent_run_id),
                   '%violates check constraint "totals_are_not_negative"', 'negative tool calls');
select throws_ok(format('update pgflight.agent_runs set iterations = -1 where id = %s', :agent_run_id), '23514', null,
                 'negative iterations');
select throws_ok(format('update pgflight.agent_runs set usd = -1 where id = %s', :agent_run_id), '23514', null,
                 'a negative total');

-- budgets: one row per scope with its keys, and each rule broken once
delete from pgflight.budgets where run_id = :run_id;
create function pgflight_test.budget(p_scope text, p_run bigint, p_step bigint, p_day date, p_limit numeric,
                                     p_wall double precision, p_spent numeric default 0, p_reserved numeric default 0)
returns void language sql as $$
  insert into pgflight.budgets (scope, workspace_id, run_id, step_id, day, limit_usd, max_wall_s, spent_usd, reserved_usd)
  select p_scope, w.id, p_run, p_step, p_day, p_limit, p_wall, p_spent, p_reserved from pgflight.workspaces w where w.name = 'test'
$$;
select lives_ok(format($$select pgflight_test.budget('run', %s, null, null, 1, 60),
                                pgflight_test.budget('step', %s, %s, null, null, null),
                                pgflight_test.budget('workspace_day', null, null, date '2030-01-01', 0, null, 0.5, 0.25)$$,
                       :run_id, :run_id, :step_id),
                'a run, a step and a workspace day budget, with and without caps');
select throws_like($$select pgflight_test.budget('tree', null, null, date '2030-01-02', 1, null)$$,
                   '%violates check constraint "scope_is_known"', 'an unknown scope');
select throws_like(format($$select pgflight_test.budget('run', %s, null, date '2030-01-02', 1, null)$$, :run_id),
                   '%violates check constraint "scope_names_its_key"', 'a run budget with a day');
select throws_ok(format($$select pgflight_test.budget('run', %s, %s, null, 1, null)$$, :run_id, :step_id), '23514', null,
                 'a run budget with a step');
select throws_ok($$select pgflight_test.budget('run', null, null, null, 1, null)$$, '23514', null, 'a run budget without its run');
select throws_ok(format($$select pgflight_test.budget('step', %s, null, null, 1, null)$$, :run_id), '23514', null,
                 'a step budget without its step');
select throws_ok(format($$select pgflight_test.budget('workspace_day', %s, null, date '2030-01-02', 1, null)$$, :run_id),
                 '23514', null, 'a workspace day budget with a run');
select throws_ok($$select pgflight_test.budget('workspace_day', null, null, null, 1, null)$$, '23514', null,
                 'a workspace day budget without its day');
select throws_like($$select pgflight_test.budget('workspace_day', null, null, date '2030-01-02', -1, null)$$,
                   '%violates check constraint "amounts_are_not_negative"', 'a negative limit');
select throws_ok($$select pgflight_test.budget('workspace_day', null, null, date '2030-01-02', null, null, 0, -0.01)$$,
                 '23514', null, 'a negative reservation without a limit');
select throws_ok($$select pgflight_test.budget('workspace_day', null, null, date '2030-01-02', 1, null, -0.01, 0)$$,
                 '23514', null, 'a negative spend');
select throws_like($$select pgflight_test.budget('workspace_day', null, null, date '2030-01-02', 1, 0)$$,
                   '%violates check constraint "max_wall_is_positive"', 'a wall-time cap of 0 s');

select * from finish();
rollback;
