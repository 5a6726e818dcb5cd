-- reclaim_expired: an expired lease ends lease_expired and a new attempt follows; at the ceiling
-- the step is dead-lettered with reason lease_expired; a cancel_requested attempt ends cancelled;
-- an attempt past its deadline ends timed_out even while it heartbeats. Live leases are untouched.
begin;
\ir ../_helpers.psql
select plan(9);

select step_id as s_retry, attempt_id as a_retry from pgflight_test.hold(:w1, 'r', '{"max_attempts": 2}', 10) \gset
select step_id as s_dead from pgflight_test.hold(:w1, 'r', '{"max_attempts": 1}', 10) \gset
select run_id as r_cx, step_id as s_cx from pgflight_test.hold(:w1, 'r', '{}', 10) \gset
select pgflight.cancel_run(:r_cx) \gset
select step_id as s_live from pgflight_test.hold(:w1, 'r', '{}', 100) \gset
select step_id as s_late, attempt_id as a_late, token as t_late from pgflight_test.hold(:w1, 'r', '{"max_runtime_s": 20, "max_attempts": 3}', 100) \gset

set local pgflight.fake_now = '2030-01-01 00:00:10+00';
select is(pgflight.reclaim_expired(), 0, 'a lease is not reclaimed at its expiry instant');
set local pgflight.fake_now = '2030-01-01 00:00:11+00';
select is(pgflight.reclaim_expired(), 3, 'the three expired leases are reclaimed');
select results_eq(format('select status, attempt_no, failed_attempts from pgflight.step_status where step_id = %s', :s_retry),
                  $$values ('queued', 2, 1)$$, 'with attempts left: a new attempt is queued');
select is((select status from pgflight.step_attempts where id = :a_retry), 'lease_expired', 'the old attempt ended lease_expired');
select results_eq(format('select status, reason from pgflight.step_status where step_id = %s', :s_dead),
                  $$values ('dead_letter', 'lease_expired')$$, 'at the ceiling: dead letter, reason lease_expired');
select is(pgflight_test.status(:s_cx), 'cancelled', 'a cancel_requested attempt ends cancelled');
select is(pgflight_test.status(:s_live), 'running', 'a live lease is untouched');

set local pgflight.fake_now = '2030-01-01 00:00:21+00';
select pgflight.heartbeat(:w1, array[:a_late]::bigint[], array[:t_late]::bigint[]) \gset
select is(pgflight.reclaim_expired(), 1, 'the attempt past its deadline is reclaimed although it heartbeats');
select results_eq(format('select status, reason from pgflight.step_attempts where id = %s', :a_late),
                  $$values ('timed_out', 'deadline_exceeded')$$, 'it ended timed_out');

select * from finish();
rollback;
