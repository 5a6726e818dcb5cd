-- emit_event resolves every pending wait for its name and key and requeues the parked steps; the
-- same event id again changes nothing; a second event leaves the recorded outcome alone (the first
-- write wins); the same id for another payload is ZF004.
begin;
\ir ../_helpers.psql
select plan(9);

select run_id as r1, step_id as s1, attempt_id as a1, token as t1 from pgflight_test.hold(:w1) \gset
select run_id as r2, step_id as s2, attempt_id as a2, token as t2 from pgflight_test.hold(:w2) \gset
select outcome from pgflight.wait_event(:a1, :t1, 'paid', 'order.paid', '42');
select outcome from pgflight.wait_event(:a2, :t2, 'paid', 'order.paid', '42');
select results_eq($$select event_id, emitted, woken from pgflight.emit_event('test', 'order.paid', '42', '{"usd": 1}', '{"event_id": "e1"}')$$,
                  $$values ('e1'::text, true, 2)$$, 'the emit wakes both waiting steps');
select is(pgflight_test.status(:s1), 'queued', 'the first step is requeued');
select is(pgflight_test.status(:s2), 'queued', 'the second step is requeued');
select is(pgflight_test.events(:r1, :s1, 'wait_resolved'), 1::bigint, 'wait_resolved is logged');
select results_eq($$select event_id, emitted, woken from pgflight.emit_event('test', 'order.paid', '42', '{"usd": 1}', '{"event_id": "e1"}')$$,
                  $$values ('e1'::text, false, 0)$$, 'the same event id again is a no-op');
select results_eq($$select emitted, woken from pgflight.emit_event('test', 'order.paid', '42', '{"usd": 2}', '{"event_id": "e2"}')$$,
                  $$values (true, 0)$$, 'a second event finds no pending wait');
select results_eq(format('select payload, event_id from pgflight.waits where step_id = %s', :s1),
                  $$values ('{"usd": 1}'::jsonb, 'e1'::text)$$, 'the first event''s outcome stays');
select throws_ok($$select pgflight.emit_event('test', 'order.paid', '42', '{"usd": 3}', '{"event_id": "e1"}')$$,
                 'ZF004', null, 'the same id with another payload is ZF004');
select isnt((select event_id from pgflight.emit_event('test', 'order.paid', '42')), null, 'an event id is generated when not given');

select * from finish();
rollback;
