-- load_transcript: a tool call left in_flight by a lapsed attempt is interrupted for the next
-- attempt; the transcript comes back in (iteration, seq) order; mark_tool_call on the interrupted
-- call puts it back in flight without counting it again; complete_tool_call keeps the first result.
begin;
\ir ../_helpers.psql
select plan(7);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent', '{"backoff": {"base_s": 0, "jitter": 0}}', 5) \gset
select agent_run_id from pgflight.begin_agent_run(:attempt_id, :token, '{"model": "offline", "task": "go"}') \gset
select pgflight.record_model_call(:attempt_id, :token, :agent_run_id, 1,
  '[{"type": "tool_use", "id": "tu1", "name": "note", "input": {}}]', '{}', 'offline');
select results_eq(format('select previous_status from pgflight.mark_tool_call(%s, %s, %s, %L)', :attempt_id, :token, :agent_run_id, 'tu1'),
  $$values ('new')$$, 'the first mark is new');

set local pgflight.fake_now = '2030-01-01 00:00:10+00';
select pgflight.reclaim_expired();
select attempt_id as att2, token as tok2 from pgflight_test.take(:w2, 'agent') \gset

select results_eq(format('select iteration, seq, block_type, status from pgflight.load_transcript(%s, %s, %s)', :att2, :tok2, :agent_run_id),
  $$values (0, 0, 'text', 'completed'), (1, 0, 'tool_use', 'completed'), (1, 1000, 'tool_result', 'interrupted')$$,
  'the in-flight call is interrupted, in order');
select results_eq(format('select previous_status from pgflight.mark_tool_call(%s, %s, %s, %L)', :att2, :tok2, :agent_run_id, 'tu1'),
  $$values ('interrupted')$$, 'a retry of the interrupted call');
select is((select tool_calls from pgflight.agent_runs where id = :agent_run_id), 1, 'counted once');
select results_eq(format($$select completed from pgflight.complete_tool_call(%s, %s, %s, 'tu1', '{"type": "tool_result", "tool_use_id": "tu1", "content": "a"}')$$, :att2, :tok2, :agent_run_id),
  $$values (true)$$, 'completed');
select results_eq(format($$select completed from pgflight.complete_tool_call(%s, %s, %s, 'tu1', '{"type": "tool_result", "tool_use_id": "tu1", "content": "b"}')$$, :att2, :tok2, :agent_run_id),
  $$values (false)$$, 'a second result is a no-op');
select throws_ok(format('select pgflight.load_transcript(%s, %s, %s)', :attempt_id, :token, :agent_run_id), 'ZF001', null,
  'the lapsed attempt cannot load (or write) anything');

select * from finish();
rollback;
