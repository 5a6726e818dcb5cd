-- complete_tool_calls stores all of its results or none: one element that is not a tool_result
-- block with a tool_use_id is 22023, a result for an unknown call ZF003, and the other results of
-- the call are not stored either (the shape is now checked by the store statement
-- itself, and the helper that raises runs after it; the error undoes the store).
begin;
\ir ../_helpers.psql
select plan(8);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id from pgflight.begin_agent_run(:attempt_id, :token, '{"model": "claude-haiku-4-5", "task": "t"}') \gset
select pgflight.record_model_call(:attempt_id, :token, :agent_run_id, 1,
  '[{"type": "tool_use", "id": "a", "name": "note", "input": {}}, {"type": "tool_use", "id": "b", "name": "note", "input": {}}]',
  '{"input_tokens": 10}', 'claude-haiku-4-5', '{"mark_tools": true}');

create function pgflight_test.complete(p_results jsonb) returns text[] language sql as $$
  select c.stored from pgflight.complete_tool_calls(
    (select a.id from pgflight.step_attempts a join pgflight.agent_runs r on r.step_id = a.step_id),
    (select a.fencing_token from pgflight.step_attempts a join pgflight.agent_runs r on r.step_id = a.step_id),
    (select r.id from pgflight.agent_runs r), p_results) c
$$;

select throws_ok($$select pgflight_test.complete('[{"type": "tool_result", "tool_use_id": "a", "content": "A"},
                                                   {"type": "text", "tool_use_id": "b", "text": "B"}]')$$,
                 '22023', 'results must be tool_result blocks', 'a block that is not a tool_result');
select throws_ok($$select pgflight_test.complete('[{"type": "tool_result", "tool_use_id": "a", "content": "A"}, 5]')$$,
                 '22023', 'results must be tool_result blocks', 'an element that is not an object');
select throws_ok($$select pgflight_test.complete('[{"type": "tool_result", "tool_use_id": "a", "content": "A"},
                                                   {"type": "tool_result", "content": "B"}]')$$,
                 '22023', 'results must be tool_result blocks', 'a tool_result without a tool_use_id');
select throws_ok($$select pgflight_test.complete('{"type": "tool_result", "tool_use_id": "a"}')$$,
                 '22023', 'results must be tool_result blocks', 'results that are not an array');
select throws_ok($$select pgflight_test.complete('[{"type": "tool_result", "tool_use_id": "a", "content": "A"},
                                                   {"type": "tool_result", "tool_use_id": "zz", "content": "?"}]')$$,
                 'ZF003', null, 'a result for an unknown call');
select results_eq(format($$select tool_use_id, status, content from pgflight.traces
                            where agent_run_id = %s and block_type = 'tool_result' order by seq$$, :agent_run_id),
                  $$values ('a', 'in_flight', null::jsonb), ('b', 'in_flight', null::jsonb)$$,
                  'none of those calls stored a result');
select is(pgflight_test.complete('[]'), '{}'::text[], 'no results store nothing');
select is((select array_agg(s order by s) from unnest(pgflight_test.complete(
            '[{"type": "tool_result", "tool_use_id": "b", "content": "B"},
              {"type": "tool_result", "tool_use_id": "a", "content": "A"}]')) s),
          array['a', 'b'], 'well-formed results are all stored');

select * from finish();
rollback;
