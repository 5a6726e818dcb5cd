-- fail_step with attempts left: the attempt ends failed, a new queued attempt (attempt_no + 1)
-- becomes claimable after the backoff (base_s * factor^(n-1)), and the engine counts the failure.
begin;
\ir ../_helpers.psql
select plan(9);

select run_id, step_id, attempt_id, token
  from pgflight_test.hold(:w1, 'r', '{"max_attempts": 3, "backoff": {"base_s": 10, "factor": 3, "jitter": 0}}') \gset
create temp table f on commit drop as select * from pgflight.fail_step(:attempt_id, :token, '{"message": "boom"}');
select results_eq('select outcome, available_after from f', $$values ('retry', '2030-01-01 00:00:10+00'::timestamptz)$$,
                  'outcome retry, claimable after base_s');
select results_eq(format('select status, error from pgflight.step_attempts where id = %s', :attempt_id),
                  $$values ('failed', '{"message": "boom"}'::jsonb)$$, 'the attempt ended failed with its error');
select results_eq(format('select attempt_no, status from pgflight.step_attempts where id = %s', (select next_attempt_id from f)),
                  $$values (2, 'queued')$$, 'the next attempt is attempt 2, queued');
select is((select failed_attempts from pgflight.steps where id = :step_id), 1, 'one failure counted by the engine');
select is((select count(*) from pgflight.claim_batch(:w1, 1, 30)), 0::bigint, 'not claimable during the backoff');

set local pgflight.fake_now = '2030-01-01 00:00:10+00';
select attempt_id as a2, token as t2 from pgflight_test.take(:w1) \gset
select is(:a2::bigint, (select next_attempt_id from f), 'claimable once the backoff passed');
select results_eq(format('select outcome, available_after from pgflight.fail_step(%s, %s, null)', :a2, :t2),
                  $$values ('retry', '2030-01-01 00:00:40+00'::timestamptz)$$, 'the second delay is base_s * factor');
select is(pgflight_test.events(:run_id, :step_id, 'retry_scheduled'), 2::bigint, 'each retry is logged');
select throws_ok(format('select pgflight.fail_step(%s, %s, %L)', :a2, :t2, '{}'), 'ZF001', null, 'failing an ended attempt is ZF001');

select * from finish();
rollback;
