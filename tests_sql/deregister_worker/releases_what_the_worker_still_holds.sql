-- deregister_worker releases every lease the stopped worker still holds (a claim of its own that
-- committed during its shutdown): a claimed or running attempt is queued again at once with no
-- attempt spent and a 'released' event noting the deregistration; a cancel-requested one
-- acknowledges its cancel. Another worker's leases are untouched, and a second deregister is a
-- no-op.
begin;
\ir ../_helpers.psql
select plan(9);

select run_id as r1, step_id as s1, attempt_id as a1, token as t1 from pgflight_test.hold(:w1) \gset
select run_id as r2, step_id as s2, attempt_id as a2 from pgflight_test.hold(:w1, p_start => false) \gset
select run_id as r3, step_id as s3, attempt_id as a3 from pgflight_test.hold(:w1) \gset
select run_id as r4, step_id as s4, attempt_id as a4 from pgflight_test.hold(:w2) \gset
select pgflight.cancel_run(:r3) \gset

select lives_ok(format('select pgflight.deregister_worker(%s)', :w1), 'deregister lives with leases still held');
select results_eq(format('select status, attempt_no, failed_attempts from pgflight.step_status where step_id in (%s, %s) order by step_id', :s1, :s2),
                  $$values ('queued', 1, 0), ('queued', 1, 0)$$,
                  'the running and the claimed attempt are queued again, no attempt spent');
select is(pgflight_test.events(:r1, :s1, 'released'), 1::bigint, 'the running one''s release is logged');
select is((select detail ->> 'note' from pgflight.run_events where step_id = :s2 and reason = 'released'),
          'worker deregistered', 'the release says why');
select is(pgflight_test.status(:s3), 'cancelled', 'a cancel-requested attempt acknowledges its cancel');
select is(pgflight_test.status(:s4), 'running', 'another worker''s lease is untouched');
select throws_ok(format('select pgflight.heartbeat(%s, array[%s], array[%s])', :w1, :a1, :t1), 'ZF010', null,
                 'the stopped worker cannot heartbeat');
select attempt_id as again from pgflight_test.take(:w2, p_start => false) \gset
select ok(:again in (:a1, :a2), 'another worker claims a released attempt at once');
select lives_ok(format('select pgflight.deregister_worker(%s)', :w1), 'a second deregister is a no-op');

select * from finish();
rollback;
