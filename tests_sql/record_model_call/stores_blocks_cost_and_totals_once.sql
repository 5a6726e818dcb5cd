-- record_model_call: one trace row per response block, one costs row priced from model_prices,
-- totals updated; a repeat of the same iteration is a no-op; a stale token is ZF001 and writes
-- nothing; a call past max_iterations is ZF007; an unknown model is 22023.
begin;
\ir ../_helpers.psql
select plan(9);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id from pgflight.begin_agent_run(:attempt_id, :token,
  '{"model": "claude-haiku-4-5", "task": "t", "max_iterations": 2}') \gset

select results_eq(format($$select usd, recorded, iterations from pgflight.record_model_call(%s, %s, %s, 1,
    '[{"type": "text", "text": "hi"}, {"type": "tool_use", "id": "tu1", "name": "note", "input": {}}]',
    '{"input_tokens": 1000000, "output_tokens": 100000, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}',
    'claude-haiku-4-5-20251001', '{"stop_reason": "tool_use"}')$$, :attempt_id, :token, :agent_run_id),
  $$values (1.5::numeric, true, 1)$$, 'the call costs usage x price (1 + 0.5 USD) and is recorded');
select is((select count(*) from pgflight.traces where agent_run_id = :agent_run_id and iteration = 1), 2::bigint,
  'one trace row per block');
select is((select tool_use_id from pgflight.traces where agent_run_id = :agent_run_id and iteration = 1 and seq = 1),
  'tu1', 'the tool_use keeps its id');
select results_eq(format($$select recorded from pgflight.record_model_call(%s, %s, %s, 1, '[]', '{}', 'claude-haiku-4-5')$$,
    :attempt_id, :token, :agent_run_id), $$values (false)$$, 'a repeated write of the iteration is a no-op');
select is((select count(*) from pgflight.costs where agent_run_id = :agent_run_id), 1::bigint, 'one costs row');
select throws_ok(format($$select pgflight.record_model_call(%s, %s, %s, 2, '[]', '{}', 'claude-haiku-4-5')$$,
    :attempt_id, :token + 1000, :agent_run_id), 'ZF001', null, 'a stale token is ZF001');
select throws_ok(format($$select pgflight.record_model_call(%s, %s, %s, 3, '[]', '{}', 'claude-haiku-4-5')$$,
    :attempt_id, :token, :agent_run_id), 'ZF007', null, 'a call past max_iterations is ZF007');
select throws_ok(format($$select pgflight.record_model_call(%s, %s, %s, 2, '[]', '{}', 'gpt-unknown')$$,
    :attempt_id, :token, :agent_run_id), '22023', null, 'a model without a price is 22023');
select is((select usd from pgflight.agent_runs where id = :agent_run_id), 1.5::numeric, 'totals hold the one call');

select * from finish();
rollback;
