-- wait_timer parks the attempt without a lease until the timer is due; expire_waits requeues it
-- then, the same attempt (no attempt spent) is claimed again and the same call returns elapsed at
-- once. The due time is the first call's.
begin;
\ir ../_helpers.psql
select plan(11);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select results_eq(format('select outcome, due_at, waiting from pgflight.wait_timer(%s, %s, %L, 10)', :attempt_id, :token, 'nap'),
                  $$values (null::text, '2030-01-01 00:00:10+00'::timestamptz, true)$$, 'not due: the attempt parks');
select is(pgflight_test.status(:step_id), 'awaiting_approval', 'the attempt is parked (no lease)');
select is(pgflight_test.events(:run_id, :step_id, 'wait_parked'), 1::bigint, 'wait_parked is logged');
select is((select count(*) from pgflight.claim_batch(:w2, 10, 30)), 0::bigint, 'a sleeping step is not claimable');
set local pgflight.fake_now = '2030-01-01 00:00:09+00';
select is(pgflight.expire_waits(10), 0, 'not due yet: the sweep leaves it');
set local pgflight.fake_now = '2030-01-01 00:00:10+00';
select is(pgflight.expire_waits(10), 1, 'due: the sweep resolves it');
select is(pgflight_test.status(:step_id), 'queued', 'and requeues the step');
select attempt_id as a2, token as t2 from pgflight_test.take(:w2) \gset
select is(:a2::bigint, :attempt_id::bigint, 'the same attempt runs again: no attempt spent');
select results_eq(format('select outcome, due_at, waiting from pgflight.wait_timer(%s, %s, %L, 500)', :a2, :t2, 'nap'),
                  $$values ('elapsed'::text, '2030-01-01 00:00:10+00'::timestamptz, false)$$,
                  'the same key returns elapsed at once, with the first call''s due time');
select results_eq(format('select outcome, waiting from pgflight.wait_timer(%s, %s, %L, 0)', :a2, :t2, 'now'),
                  $$values ('elapsed'::text, false)$$, 'a timer of 0 s is elapsed at once and does not park');
select is((select s.failed_attempts from pgflight.steps s where s.id = :step_id), 0, 'no failure counted');

select * from finish();
rollback;
