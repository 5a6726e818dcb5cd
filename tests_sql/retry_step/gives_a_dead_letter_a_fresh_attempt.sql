-- retry_step reopens a dead-lettered step on a fresh attempt (attempt_no + 1, failure count back
-- to zero), keeps the history, and the run runs again. Anything but a dead letter is ZF006.
begin;
\ir ../_helpers.psql
select plan(7);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'r', '{"max_attempts": 1}') \gset
select throws_ok(format('select pgflight.retry_step(%s)', :step_id), 'ZF006', null, 'a running step cannot be retried');
select pgflight.fail_step(:attempt_id, :token, '{"message": "x"}') \gset
select pgflight.retry_step(:step_id, 'ops', 'fixed the input') as fresh \gset
select results_eq(format('select attempt_id, attempt_no, status, failed_attempts from pgflight.step_status where step_id = %s', :step_id),
                  format('values (%s::bigint, 2, %L, 0)', :fresh, 'queued'), 'a fresh queued attempt 2 with no failures counted');
select is((select status from pgflight.runs where id = :run_id), 'running', 'the run runs again');
select is((select status from pgflight.step_attempts where id = :attempt_id), 'dead_letter', 'the old attempt stays as history');
select is(pgflight_test.events(:run_id, :step_id, 'retried'), 1::bigint, 'retried is logged');
select throws_ok(format('select pgflight.retry_step(%s)', :step_id), 'ZF006', null, 'a queued step cannot be retried');
select throws_ok('select pgflight.retry_step(-1)', 'ZF003', null, 'an unknown step is ZF003');

select * from finish();
rollback;
