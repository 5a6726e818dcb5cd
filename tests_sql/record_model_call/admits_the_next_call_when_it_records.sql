-- With p_next_est_usd, record_model_call settles the call and admits the next one in the
-- same budget move (one move per iteration); complete_tool_calls then re-prices that reservation
-- (the request about to be sent, tool results included) instead of admitting again. A cap that refuses the early admission does not refuse the record:
-- the call is stored and settled, nothing is reserved, and complete_tool_calls raises the refusal
-- as before. A wall-time cap that runs out while the tools run is caught by complete_tool_calls.
-- Results stored without next_iteration (before the attempt parks, or fails) give the early
-- reservation back.
-- An eight-argument call (other-language workers of @v0.4.0) still works.
begin;
\ir ../_helpers.psql
select plan(13);

update pgflight.workspaces set daily_usd_cap = 1.00 where name = 'test';
select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id from pgflight.begin_agent_run(:attempt_id, :token,
  '{"model": "claude-haiku-4-5", "task": "t", "max_iterations": 3}') \gset
select pgflight.reserve_budget(:attempt_id, :token, :agent_run_id, 1, 0.1);

-- claude-haiku-4-5 input: 1 USD per million tokens, so 100,000 tokens cost 0.1 USD
select results_eq(format($$select recorded, usd, next_reserved from pgflight.record_model_call(%s, %s, %s, 1,
    '[{"type": "tool_use", "id": "a", "name": "note", "input": {}}]', '{"input_tokens": 100000}',
    'claude-haiku-4-5', '{"mark_tools": true}', 0.2)$$, :attempt_id, :token, :agent_run_id),
  $$values (true, 0.1::numeric, true)$$, 'the call is recorded and the next one admitted');
select results_eq($$select spent_usd, reserved_usd from pgflight.budgets where scope = 'workspace_day'$$,
  $$values (0.1::numeric, 0.2::numeric)$$, 'settled to the actual cost and the next estimate reserved, on the day''s budget');
select results_eq(format('select reserved_iteration, reserved_usd, reserved_attempt_id = %s from pgflight.agent_runs where id = %s',
    :attempt_id, :agent_run_id),
  $$values (2, 0.2::numeric, true)$$, 'the agent run holds the reservation of call 2');

select results_eq(format($$select stored, reserved, reserved_usd from pgflight.complete_tool_calls(%s, %s, %s,
    '[{"type": "tool_result", "tool_use_id": "a", "content": "A"}]', 2, 0.5)$$, :attempt_id, :token, :agent_run_id),
  $$values (array['a'], true, 0.5::numeric)$$,
  'complete_tool_calls re-prices the reservation it finds to the request about to be sent');
select results_eq($$select spent_usd, reserved_usd from pgflight.budgets where scope = 'workspace_day'$$,
  $$values (0.1::numeric, 0.5::numeric)$$, 'by the difference: nothing was reserved twice');

-- call 2 costs 0.8: spent 0.9, and 0.2 more for call 3 would pass the day's 1.00
select results_eq(format($$select recorded, usd, next_reserved from pgflight.record_model_call(%s, %s, %s, 2,
    '[{"type": "tool_use", "id": "b", "name": "note", "input": {}}]', '{"input_tokens": 800000}',
    'claude-haiku-4-5', '{"mark_tools": true}', 0.2)$$, :attempt_id, :token, :agent_run_id),
  $$values (true, 0.8::numeric, false)$$, 'a refused early admission still records the call');
select results_eq($$select spent_usd, reserved_usd from pgflight.budgets where scope = 'workspace_day'$$,
  $$values (0.9::numeric, 0::numeric)$$, 'the call is settled and nothing is reserved');
select results_eq(format($$select reserved, refusal ->> 'message' like 'budget exceeded: workspace_day budget%%'
    from pgflight.complete_tool_calls(%s, %s, %s, '[{"type": "tool_result", "tool_use_id": "b", "content": "B"}]', 3, 0.2)$$,
    :attempt_id, :token, :agent_run_id),
  $$values (false, true)$$, 'complete_tool_calls makes the admission and returns the refusal');

-- the last call (max_iterations 3) is recorded with eight arguments and admits nothing
select results_eq(format($$select recorded, next_reserved from pgflight.record_model_call(%s, %s, %s, 3,
    '[{"type": "text", "text": "done"}]', '{"output_tokens": 1}', 'claude-haiku-4-5', '{}')$$,
    :attempt_id, :token, :agent_run_id),
  $$values (true, false)$$, 'an eight-argument call records as before');

-- a wall-time cap that runs out between the early admission and the tool results
select run_id as r2, step_id as s2, attempt_id as a2, token as t2 from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id as ar2 from pgflight.begin_agent_run(:a2, :t2,
  '{"model": "claude-haiku-4-5", "task": "t", "max_wall_s": 60}') \gset
select pgflight.reserve_budget(:a2, :t2, :ar2, 1, 0.01);
select results_eq(format($$select next_reserved from pgflight.record_model_call(%s, %s, %s, 1,
    '[{"type": "tool_use", "id": "w", "name": "note", "input": {}}]', '{"input_tokens": 10}',
    'claude-haiku-4-5', '{"mark_tools": true}', 0.01)$$, :a2, :t2, :ar2),
  $$values (true)$$, 'admitted early within the wall time');
update pgflight.budgets set started_at = started_at - interval '2 minutes' where step_id = :s2 and scope = 'step';
select results_eq(format($$select reserved, refusal ->> 'message' like 'budget exceeded: wall time%%'
    from pgflight.complete_tool_calls(%s, %s, %s, '[{"type": "tool_result", "tool_use_id": "w", "content": "W"}]', 2, 0.01)$$,
    :a2, :t2, :ar2),
  $$values (false, true)$$, 'the held reservation is refused once the wall time ran out while the tools ran');

-- results stored before parking: the early reservation is given back
select run_id as r3, step_id as s3, attempt_id as a3, token as t3 from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id as ar3 from pgflight.begin_agent_run(:a3, :t3, '{"model": "claude-haiku-4-5", "task": "t"}') \gset
select pgflight.reserve_budget(:a3, :t3, :ar3, 1, 0.01);
select results_eq(format($$select next_reserved from pgflight.record_model_call(%s, %s, %s, 1,
    '[{"type": "tool_use", "id": "p", "name": "delegate", "input": {}}]', '{"input_tokens": 10}',
    'claude-haiku-4-5', '{"mark_tools": true}', 0.03)$$, :a3, :t3, :ar3),
  $$values (true)$$, 'admitted early');
select pgflight.complete_tool_calls(:a3, :t3, :ar3, '[{"type": "tool_result", "tool_use_id": "p", "content": "P"}]');
select results_eq(format($$select r.reserved_iteration, r.reserved_usd, b.reserved_usd from pgflight.agent_runs r
    join pgflight.budgets b on b.scope = 'workspace_day' and b.workspace_id = r.workspace_id where r.id = %s$$, :ar3),
  $$values (null::integer, 0::numeric, 0::numeric)$$, 'results stored without next_iteration give the reservation back');

select * from finish();
rollback;
