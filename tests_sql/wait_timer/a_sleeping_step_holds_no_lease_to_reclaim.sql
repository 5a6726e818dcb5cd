-- A sleeping step holds no lease: long past its lease the reclaim sweep finds nothing, no attempt
-- is spent, and the step wakes on its timer alone.
begin;
\ir ../_helpers.psql
select plan(4);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'r', '{}', 5) \gset
select waiting from pgflight.wait_timer(:attempt_id, :token, 'nap', 3600);
set local pgflight.fake_now = '2030-01-01 00:30:00+00';
select is(pgflight.reclaim_expired(100), 0, 'nothing to reclaim past the lease');
select is(pgflight_test.status(:step_id), 'awaiting_approval', 'the step still sleeps');
set local pgflight.fake_now = '2030-01-01 01:00:00+00';
select is(pgflight.expire_waits(10), 1, 'the timer wakes it');
select is((select count(*) from pgflight.step_attempts a where a.step_id = :step_id), 1::bigint, 'on its one attempt');

select * from finish();
rollback;
