-- expire_waits deletes emitted events past their retention and the channel rows nobody uses; a
-- timer that comes due after its step was cancelled is resolved but the step stays cancelled.
-- A negative limit is 22023.
begin;
\ir ../_helpers.psql
select plan(7);

update pgflight.settings set event_retention_s = 60;
select event_id from pgflight.emit_event('test', 'n', 'k', '1');
select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select waiting from pgflight.wait_timer(:attempt_id, :token, 'nap', 30);
select cancel_step_ok from (select true as cancel_step_ok from pgflight.cancel_step(:step_id, 'alice', 'stop')) c;
select is(pgflight_test.status(:step_id), 'cancelled', 'the sleeping step is cancelled at once');
set local pgflight.fake_now = '2030-01-01 00:00:59+00';
select is(pgflight.expire_waits(10), 1, 'the due timer is resolved');
select is(pgflight_test.status(:step_id), 'cancelled', 'the cancelled step stays cancelled');
set local pgflight.fake_now = '2030-01-01 00:01:00+00';
select is(pgflight.expire_waits(10), 1, 'the event past its retention is deleted');
select is((select count(*) from pgflight.event_channels), 0::bigint, 'its unused channel row is deleted');
select is((select count(*) from pgflight.emitted_events), 0::bigint, 'no event is kept');
select throws_ok('select pgflight.expire_waits(-1)', '22023', null, 'a negative limit is 22023');

select * from finish();
rollback;
