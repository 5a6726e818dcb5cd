-- record_model_call refuses response blocks and a usage nested deeper than settings.max_json_depth,
-- and complete_tool_calls tool results (ZF005, nothing stored), with the cap as the settings row
-- holds it when the call is made: both functions read it with their fence and send to
-- _require_json_depth only a value large enough to nest that deep.
begin;
\ir ../_helpers.psql
select plan(7);

update pgflight.settings set max_json_depth = 3;
select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id from pgflight.begin_agent_run(:attempt_id, :token, '{"model": "claude-haiku-4-5", "task": "t"}') \gset

select throws_ok(format($$select pgflight.record_model_call(%s, %s, %s, 1,
    '[{"type": "text", "text": "x"}]', '{"input_tokens": 1, "extra": {"a": {"b": {"c": 1}}}}', 'claude-haiku-4-5')$$,
    :attempt_id, :token, :agent_run_id),
  'ZF005', 'usage nests deeper than the cap settings.max_json_depth', 'a usage four levels deep, at a cap of 3');
select throws_ok(format($$select pgflight.record_model_call(%s, %s, %s, 1,
    '[{"type": "text", "text": "x", "extra": {"a": {"b": 1}}}]', '{"input_tokens": 1}', 'claude-haiku-4-5')$$,
    :attempt_id, :token, :agent_run_id),
  'ZF005', 'model response blocks nests deeper than the cap settings.max_json_depth', 'blocks four levels deep');
select is((select count(*) from pgflight.costs where agent_run_id = :agent_run_id), 0::bigint, 'nothing recorded');

select results_eq(format($$select recorded from pgflight.record_model_call(%s, %s, %s, 1,
    '[{"type": "tool_use", "id": "a", "name": "note", "input": {}}]', '{"input_tokens": 1}', 'claude-haiku-4-5',
    '{"mark_tools": true}')$$, :attempt_id, :token, :agent_run_id),
  $$values (true)$$, 'blocks and a usage within the cap are recorded');

select throws_ok(format($$select pgflight.complete_tool_calls(%s, %s, %s,
    '[{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": {"a": 1}}]}]')$$,
    :attempt_id, :token, :agent_run_id),
  'ZF005', 'tool results nests deeper than the cap settings.max_json_depth', 'tool results four levels deep');
select results_eq(format($$select stored from pgflight.complete_tool_calls(%s, %s, %s,
    '[{"type": "tool_result", "tool_use_id": "a", "content": "A"}]')$$, :attempt_id, :token, :agent_run_id),
  $$values (array['a'])$$, 'results within the cap are stored');

update pgflight.settings set max_json_depth = 64;
select results_eq(format($$select recorded from pgflight.record_model_call(%s, %s, %s, 2,
    '[{"type": "text", "text": "x", "extra": {"a": {"b": 1}}}]', '{"input_tokens": 1, "extra": {"a": {"b": {"c": 1}}}}',
    'claude-haiku-4-5')$$, :attempt_id, :token, :agent_run_id),
  $$values (true)$$, 'the cap raised, the same values are recorded');

select * from finish();
rollback;
