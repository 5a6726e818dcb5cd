-- The agent loop's two writes per iteration: record_model_call with mark_tools puts the response's
-- tool calls in flight in the same transaction (as many as max_tool_calls allows; the rest are
-- left for mark_tool_call, which refuses them with ZF007); complete_tool_calls stores every result
-- and admits the next call in one transaction; a refused admission comes back as a refusal and
-- does not undo the results.
begin;
\ir ../_helpers.psql
select plan(9);

update pgflight.workspaces set daily_usd_cap = 1.00 where name = 'test';
select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id from pgflight.begin_agent_run(:attempt_id, :token,
  '{"model": "claude-haiku-4-5", "task": "t", "max_tool_calls": 2}') \gset
select pgflight.reserve_budget(:attempt_id, :token, :agent_run_id, 1, 0.1);

select results_eq(format($$select marked, tool_calls from pgflight.record_model_call(%s, %s, %s, 1,
    '[{"type": "text", "text": "go"}, {"type": "tool_use", "id": "a", "name": "note", "input": {}},
      {"type": "tool_use", "id": "b", "name": "note", "input": {}}, {"type": "tool_use", "id": "c", "name": "note", "input": {}}]',
    '{"input_tokens": 100000}', 'claude-haiku-4-5', '{"mark_tools": true}')$$, :attempt_id, :token, :agent_run_id),
  $$values (array['a', 'b'], 2)$$, 'the calls within max_tool_calls are marked in flight and counted');
select results_eq(format('select seq, status from pgflight.traces where agent_run_id = %s and iteration = 1 and seq >= 1000 order by seq', :agent_run_id),
  $$values (1001, 'in_flight'), (1002, 'in_flight')$$, 'their result rows are in flight');
select throws_ok(format('select pgflight.mark_tool_call(%s, %s, %s, %L)', :attempt_id, :token, :agent_run_id, 'c'),
  'ZF007', null, 'the call past the cap is refused by mark_tool_call');
select results_eq($$select spent_usd, reserved_usd from pgflight.budgets where scope = 'workspace_day'$$,
  $$values (0.1::numeric, 0::numeric)$$, 'the reservation was settled to the actual cost');

select results_eq(format($$select stored, reserved, reserved_usd from pgflight.complete_tool_calls(%s, %s, %s,
    '[{"type": "tool_result", "tool_use_id": "a", "content": "A"}, {"type": "tool_result", "tool_use_id": "b", "content": "B"}]', 2, 0.5)$$,
    :attempt_id, :token, :agent_run_id),
  $$values (array['a', 'b'], true, 0.5::numeric)$$, 'both results stored and the next call admitted in one call');
select results_eq($$select reserved_usd from pgflight.budgets where scope = 'workspace_day'$$,
  $$values (0.5::numeric)$$, 'the next call''s estimate is reserved');

select pgflight.record_model_call(:attempt_id, :token, :agent_run_id, 2,
  '[{"type": "tool_use", "id": "d", "name": "note", "input": {}}]', '{"input_tokens": 100000}', 'claude-haiku-4-5');
select results_eq(format($$select reserved, refusal ->> 'message' like 'budget exceeded: workspace_day budget%%'
    from pgflight.complete_tool_calls(%s, %s, %s, '[{"type": "tool_result", "tool_use_id": "d", "content": "D"}]', 3, 0.9)$$,
    :attempt_id, :token, :agent_run_id),
  $$values (false, true)$$, 'a refused admission comes back as a refusal naming the budget');
select is((select status from pgflight.traces where agent_run_id = :agent_run_id and tool_use_id = 'd' and block_type = 'tool_result'),
  'completed', 'the refusal did not undo the result');
select throws_ok(format($$select pgflight.complete_tool_calls(%s, %s, %s, '[{"type": "tool_result", "tool_use_id": "zz", "content": "?"}]')$$,
    :attempt_id, :token, :agent_run_id), 'ZF003', null, 'a result for an unknown call is ZF003');

select * from finish();
rollback;
