-- A decision made early for a gate the step has not reached yet is kept, and does not wake the
-- step while it sleeps on a timer: the timer's sweep wakes it, and the gate then answers at once.
begin;
\ir ../_helpers.psql
select plan(5);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select waiting from pgflight.wait_timer(:attempt_id, :token, 'nap', 60);
select results_eq(format('select applied from pgflight.approve(%s, %L, %L, null, %L)', :step_id, 'approve', 'alice', 'publish'),
                  $$values (true)$$, 'the early decision is recorded');
select is(pgflight_test.status(:step_id), 'awaiting_approval', 'the sleeping step stays parked');
set local pgflight.fake_now = '2030-01-01 00:01:00+00';
select is(pgflight.expire_waits(10), 1, 'the timer comes due');
select attempt_id as a2, token as t2 from pgflight_test.take(:w2) \gset
select results_eq(format('select outcome from pgflight.wait_timer(%s, %s, %L, 60)', :a2, :t2, 'nap'),
                  $$values ('elapsed'::text)$$, 'the recipe, run again, passes the timer');
select results_eq(format('select decision, waiting from pgflight.request_approval(%s, %s, %L)', :a2, :t2, 'publish'),
                  $$values ('approve'::text, false)$$, 'and the gate answers with the early decision');

select * from finish();
rollback;
