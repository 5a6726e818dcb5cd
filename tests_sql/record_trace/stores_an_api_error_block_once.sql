-- record_trace: a block that is not a model response (an API error met during an iteration) is
-- stored once; the same seq again is a no-op; a stale token is ZF001 and writes nothing.
begin;
\ir ../_helpers.psql
select plan(4);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id from pgflight.begin_agent_run(:attempt_id, :token, '{"model": "offline", "task": "t"}') \gset

select results_eq(format($$select created from pgflight.record_trace(%s, %s, %s, 1, 'system', 'api_error',
    '{"status": 529, "message": "overloaded"}', '{"seq": 2000}')$$, :attempt_id, :token, :agent_run_id),
  $$values (true)$$, 'the error block is stored');
select results_eq(format($$select created from pgflight.record_trace(%s, %s, %s, 1, 'system', 'api_error',
    '{"status": 529, "message": "overloaded"}', '{"seq": 2000}')$$, :attempt_id, :token, :agent_run_id),
  $$values (false)$$, 'the same block again is a no-op');
select throws_ok(format($$select * from pgflight.record_trace(%s, %s, %s, 1, 'system', 'api_error', '{}', '{"seq": 2001}')$$,
                        :attempt_id, :token + 1000, :agent_run_id),
  'ZF001', null, 'a stale token is refused');
select is((select count(*) from pgflight.traces where agent_run_id = :agent_run_id and block_type = 'api_error'),
          1::bigint, 'one api_error row in all');

select * from finish();
rollback;
