-- retry_after_s replaces the backoff but still spends an attempt; malformed options are 22023;
-- a cancelled attempt is ZF002, an unknown one ZF003.
begin;
\ir ../_helpers.psql
select plan(6);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'r', '{"max_attempts": 3, "backoff": {"base_s": 100, "jitter": 0}}') \gset
select throws_ok(format('select pgflight.fail_step(%s, %s, null, %L)', :attempt_id, :token, '{"retryable": "yes"}'), '22023', null,
                 'a non-boolean retryable is 22023');
select throws_ok(format('select pgflight.fail_step(%s, %s, null, %L)', :attempt_id, :token, '{"retry_after_s": -1}'), '22023', null,
                 'a negative retry_after_s is 22023');
select results_eq(format('select outcome, available_after from pgflight.fail_step(%s, %s, null, %L)', :attempt_id, :token, '{"retry_after_s": 2.5}'),
                  $$values ('retry', '2030-01-01 00:00:02.5+00'::timestamptz)$$, 'retry_after_s sets when the next attempt is due');
select is((select failed_attempts from pgflight.steps where id = :step_id), 1, 'and still counts toward max_attempts');

select run_id as r2, attempt_id as b1, token as bt from pgflight_test.hold(:w1) \gset
select pgflight.cancel_run(:r2) \gset
select throws_ok(format('select pgflight.fail_step(%s, %s, null)', :b1, :bt), 'ZF002', null, 'failing a cancelled attempt is ZF002');
select throws_ok('select pgflight.fail_step(-1, 1, null)', 'ZF003', null, 'an unknown attempt is ZF003');

select * from finish();
rollback;
