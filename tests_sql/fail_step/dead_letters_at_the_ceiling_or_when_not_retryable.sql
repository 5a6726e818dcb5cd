-- Attempts are counted by the engine (invariant 5): at max_attempts the step is dead-lettered
-- with the last error and the run fails; retryable = false dead-letters at once; nothing is left
-- queued past its ceiling.
begin;
\ir ../_helpers.psql
select plan(9);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'r', '{"max_attempts": 2, "backoff": {"base_s": 0, "jitter": 0}}') \gset
select pgflight.fail_step(:attempt_id, :token, '{"message": "first"}') \gset
select attempt_id as a2, token as t2 from pgflight_test.take(:w1) \gset
select results_eq(format('select outcome, next_attempt_id from pgflight.fail_step(%s, %s, %L)', :a2, :t2, '{"message": "second"}'),
                  $$values ('dead_letter', null::bigint)$$, 'the failure at the ceiling is a dead letter');
select results_eq(format('select status, failed_attempts, error from pgflight.step_status where step_id = %s', :step_id),
                  $$values ('dead_letter', 2, '{"message": "second"}'::jsonb)$$, 'dead_letter with the last error');
select is((select step_id from pgflight.dead_letters where step_id = :step_id), :step_id::bigint, 'listed in dead_letters');
select is((select status from pgflight.runs where id = :run_id), 'failed', 'the run failed');
select is((select count(*) from pgflight.step_attempts where step_id = :step_id), 2::bigint, 'no further attempt was made');
select is(pgflight_test.stranded(), 0::bigint, 'no step is queued past its ceiling');

select run_id as r2, step_id as s2, attempt_id as b1, token as bt from pgflight_test.hold(:w1, 'r', '{"max_attempts": 5}') \gset
select results_eq(format('select outcome from pgflight.fail_step(%s, %s, %L, %L)', :b1, :bt, '{"message": "fatal"}', '{"retryable": false}'),
                  $$values ('dead_letter')$$, 'retryable false dead-letters on the first failure');
select is(pgflight_test.status(:s2), 'dead_letter', 'the step is dead_letter');
select is(pgflight_test.events(:r2, :s2, 'failed'), 1::bigint, 'the dead letter is logged with reason failed');

select * from finish();
rollback;
