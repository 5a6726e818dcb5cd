-- metrics_snapshot counts the steps parked on a timer or an event wait by workspace and kind,
-- with the age of the oldest; a resolved wait is not counted.
begin;
\ir ../_helpers.psql
select plan(4);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select waiting from pgflight.wait_timer(:attempt_id, :token, 'nap', 60);
select run_id as r2, step_id as s2, attempt_id as a2, token as t2 from pgflight_test.hold(:w2) \gset
select waiting from pgflight.wait_event(:a2, :t2, 'paid', 'order.paid', '1');
set local pgflight.fake_now = '2030-01-01 00:00:30+00';
select results_eq($$select labels ->> 'kind', value from pgflight.metrics_snapshot() where metric = 'waits_parked' order by 1$$,
                  $$values ('event'::text, 1::double precision), ('timer', 1)$$, 'one parked step per kind');
select results_eq($$select value from pgflight.metrics_snapshot() where metric = 'waits_oldest_age_seconds' and labels ->> 'kind' = 'timer'$$,
                  $$values (30::double precision)$$, 'the oldest timer has waited 30 s');
select is((select labels ->> 'workspace' from pgflight.metrics_snapshot() where metric = 'waits_parked' limit 1), 'test', 'labelled by workspace');
select event_id from pgflight.emit_event('test', 'order.paid', '1');
select results_eq($$select labels ->> 'kind' from pgflight.metrics_snapshot() where metric = 'waits_parked'$$,
                  $$values ('timer'::text)$$, 'a resolved wait is not counted');

select * from finish();
rollback;
