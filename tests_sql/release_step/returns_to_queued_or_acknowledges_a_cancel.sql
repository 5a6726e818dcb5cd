-- release_step (graceful shutdown) puts the attempt back to queued at once without spending an
-- attempt; on a cancel request it acknowledges: the attempt becomes cancelled. A superseded
-- token is ZF001.
begin;
\ir ../_helpers.psql
select plan(8);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select results_eq(format('select status from pgflight.release_step(%s, %s)', :attempt_id, :token), $$values ('released')$$,
                  'release answers released');
select results_eq(format('select status, attempt_no, failed_attempts from pgflight.step_status where step_id = %s', :step_id),
                  $$values ('queued', 1, 0)$$, 'the same attempt is queued again, no attempt spent');
select is(pgflight_test.events(:run_id, :step_id, 'released'), 1::bigint, 'released is logged');
select throws_ok(format('select pgflight.release_step(%s, %s)', :attempt_id, :token), 'ZF001', null,
                 'releasing again with the old token is ZF001');
select attempt_id as again, token as t2 from pgflight_test.take(:w2) \gset
select ok(:again = :attempt_id and :t2 > :token, 'another worker claims it at once with a newer token');

select pgflight.cancel_run(:run_id) \gset
select results_eq(format('select status from pgflight.release_step(%s, %s)', :attempt_id, :t2), $$values ('cancelled')$$,
                  'releasing a cancel-requested attempt acknowledges the cancel');
select is(pgflight_test.status(:step_id), 'cancelled', 'the step is cancelled');
select throws_ok('select pgflight.release_step(-1, 1)', 'ZF003', null, 'an unknown attempt is ZF003');

select * from finish();
rollback;
