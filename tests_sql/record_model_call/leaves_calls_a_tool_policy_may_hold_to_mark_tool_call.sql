-- record_model_call with mark_tools does not put in flight a call that a tool policy of the
-- workspace may hold back (deny or require_approval, for its tool or '*'): mark_tool_call applies
-- the policy to it; a call of a tool the policies allow is marked as before.
begin;
\ir ../_helpers.psql
select plan(3);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id from pgflight.begin_agent_run(:attempt_id, :token, '{"model": "offline", "task": "t"}') \gset
select pgflight.set_tool_policy('test', 'pay', '{"action": "require_approval", "when": "$.usd ? (@ > 100)"}');
select pgflight.set_tool_policy('test', 'note', '{"action": "allow"}');

select results_eq(format($$select marked, tool_calls from pgflight.record_model_call(%s, %s, %s, 1,
    '[{"type": "tool_use", "id": "a", "name": "note", "input": {}},
      {"type": "tool_use", "id": "b", "name": "pay", "input": {"usd": 500}}]',
    '{}', 'offline', '{"mark_tools": true}')$$, :attempt_id, :token, :agent_run_id),
  $$values (array['a'], 1)$$, 'only the call no policy may hold is marked');
select results_eq(format('select policy, trace_id is null from pgflight.mark_tool_call(%s, %s, %s, %L)', :attempt_id, :token, :agent_run_id, 'b'),
  $$values ('approval_required', true)$$, 'the held call goes through mark_tool_call''s policy');
select is((select tool_calls from pgflight.agent_runs where id = :agent_run_id), 1, 'the held call is not counted');

select * from finish();
rollback;
