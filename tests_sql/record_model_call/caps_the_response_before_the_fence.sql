-- A model response over settings.max_result_bytes is refused with ZF005 and nothing is written,
-- whether the fence holds or not: the cap is checked before a lost lease is reported (the cap is
-- read by the fence's statement; on a fence miss it is read and checked first), and a response
-- within the cap is recorded.
begin;
\ir ../_helpers.psql
select plan(5);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id from pgflight.begin_agent_run(:attempt_id, :token, '{"model": "claude-haiku-4-5", "task": "t"}') \gset
update pgflight.settings set max_result_bytes = 200;

select throws_ok(format($$select pgflight.record_model_call(%s, %s, %s, 1, %L, '{"input_tokens": 10}', 'claude-haiku-4-5')$$,
                        :attempt_id, :token, :agent_run_id, jsonb_build_array(jsonb_build_object('type', 'text', 'text', repeat('x', 300)))),
                 'ZF005', null, 'a response over the cap is ZF005');
select throws_ok(format($$select pgflight.record_model_call(%s, %s, %s, 1, %L, '{"input_tokens": 10}', 'claude-haiku-4-5')$$,
                        :attempt_id, :token + 1, :agent_run_id, jsonb_build_array(jsonb_build_object('type', 'text', 'text', repeat('x', 300)))),
                 'ZF005', null, 'with a stale token too: the cap comes before the fence''s ZF001');
select throws_ok(format($$select pgflight.record_model_call(%s, %s, %s, 1, '[{"type": "text", "text": "ok"}]', '{"input_tokens": 10}', 'claude-haiku-4-5')$$,
                        :attempt_id, :token + 1, :agent_run_id),
                 'ZF001', null, 'a response within the cap with a stale token is ZF001');
select is((select count(*)::integer from pgflight.costs where agent_run_id = :agent_run_id)
          + (select count(*)::integer from pgflight.traces where agent_run_id = :agent_run_id and iteration = 1),
          0, 'nothing was written');
select results_eq(format($$select recorded from pgflight.record_model_call(%s, %s, %s, 1, '[{"type": "text", "text": "ok"}]', '{"input_tokens": 10}', 'claude-haiku-4-5')$$,
                         :attempt_id, :token, :agent_run_id),
                  $$values (true)$$, 'a response within the cap is recorded');

select * from finish();
rollback;
