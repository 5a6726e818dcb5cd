-- An event emitted before anyone waits is kept: a wait that starts later receives its payload at
-- once without parking; past the retention it is gone and the wait parks.
begin;
\ir ../_helpers.psql
select plan(6);

select event_id as ev, emitted, woken from pgflight.emit_event('test', 'order.paid', '42', '{"usd": 12}', '{"event_id": "pay-42"}') \gset
select is(:'woken'::integer, 0, 'nobody waits yet');
select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select results_eq(format('select outcome, payload, event_id, waiting from pgflight.wait_event(%s, %s, %L, %L, %L)', :attempt_id, :token, 'paid', 'order.paid', '42'),
                  $$values ('received'::text, '{"usd": 12}'::jsonb, 'pay-42'::text, false)$$,
                  'a later wait receives the kept event at once');
select is(pgflight_test.status(:step_id), 'running', 'it did not park');
select results_eq(format('select outcome, waiting from pgflight.wait_event(%s, %s, %L, %L, %L)', :attempt_id, :token, 'other', 'order.paid', '43'),
                  $$values (null::text, true)$$, 'another key has no event: it parks');
update pgflight.settings set event_retention_s = 60;
select run_id as r2, step_id as s2, attempt_id as a2, token as t2 from pgflight_test.hold(:w2) \gset
set local pgflight.fake_now = '2030-01-08 00:00:00+00';
select results_eq(format('select outcome, waiting from pgflight.wait_event(%s, %s, %L, %L, %L)', :a2, :t2, 'paid', 'order.paid', '42'),
                  $$values (null::text, true)$$, 'past its retention the event is not seen: the wait parks');
select is((select count(*) from pgflight.waits w where w.step_id = :s2 and w.outcome is null), 1::bigint, 'the wait is pending');

select * from finish();
rollback;
