-- A wait with timeout_s times out with its default payload: by the sweep when the step is parked,
-- or at once when the step runs again past the timeout; the recipe's same call then returns
-- timed_out. An event emitted after the timeout does not change the recorded outcome.
begin;
\ir ../_helpers.psql
select plan(7);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select results_eq(format('select outcome, waiting from pgflight.wait_event(%s, %s, %L, %L, %L, %L)', :attempt_id, :token, 'paid', 'order.paid', '7',
                         '{"timeout_s": 60, "default": {"paid": false}}'),
                  $$values (null::text, true)$$, 'parks with a timeout');
set local pgflight.fake_now = '2030-01-01 00:01:00+00';
select is(pgflight.expire_waits(10), 1, 'the sweep times it out');
select is(pgflight_test.status(:step_id), 'queued', 'and requeues the step');
select results_eq($$select woken from pgflight.emit_event('test', 'order.paid', '7', '{"paid": true}')$$,
                  $$values (0)$$, 'an event after the timeout wakes nobody');
select attempt_id as a2, token as t2 from pgflight_test.take(:w2) \gset
select results_eq(format('select outcome, payload, event_id, waiting from pgflight.wait_event(%s, %s, %L, %L, %L)', :a2, :t2, 'paid', 'order.paid', '7'),
                  $$values ('timed_out'::text, '{"paid": false}'::jsonb, null::text, false)$$,
                  'the recipe reads timed_out with the default payload (recorded once)');
select results_eq(format('select outcome, payload, waiting from pgflight.wait_event(%s, %s, %L, %L, %L, %L)', :a2, :t2, 'late', 'order.late', '7', '{"timeout_s": 5}'),
                  $$values (null::text, null::jsonb, true)$$, 'a new wait parks');
set local pgflight.fake_now = '2030-01-01 00:01:05+00';
select is((select count(*) from pgflight.claim_batch(:w1, 10, 30)), 0::bigint, 'due but not swept: still parked');

select * from finish();
rollback;
