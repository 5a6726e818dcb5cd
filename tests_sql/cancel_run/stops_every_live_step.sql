-- cancel_run (invariant 7): queued and parked attempts are cancelled at once, leased ones become
-- cancel_requested and hear it on heartbeat; nothing completes afterwards; the lease lapsing
-- ends them cancelled. A second cancel is a no-op; an unknown run is ZF003.
begin;
\ir ../_helpers.psql
select plan(11);

select run_id, root, root_a, root_t from pgflight_test.parked_parent(:w1, pgflight_test.children(2)) \gset
select attempt_id as c1_a, token as c1_t, step_id as c1 from pgflight_test.take(:w2, 'child') \gset
select pgflight_test.child(:root, 'c2') as c2 \gset

select results_eq(format('select was_running, cancelled, cancel_requested from pgflight.cancel_run(%s, %L, %L)', :run_id, 'ops', 'wrong input'),
                  $$values (true, 2, 1)$$, 'the parked root and queued child are cancelled, the running child is asked to stop');
select results_eq(format('select status, finished_at is not null from pgflight.runs where id = %s', :run_id),
                  $$values ('cancelled', true)$$, 'the run is cancelled');
select is(pgflight_test.status(:root), 'cancelled', 'the parked root is cancelled');
select is(pgflight_test.status(:c2), 'cancelled', 'the queued child is cancelled');
select is(pgflight_test.status(:c1), 'cancel_requested', 'the running child is cancel_requested');
select results_eq(format('select status from pgflight.heartbeat(%s, array[%s]::bigint[], array[%s]::bigint[])', :w2, :c1_a, :c1_t),
                  $$values ('cancelled')$$, 'its worker hears cancelled on heartbeat');
select throws_ok(format('select pgflight.complete_step(%s, %s, %L)', :c1_a, :c1_t, '{}'), 'ZF002', null, 'it cannot complete');
select is((select count(*) from pgflight.claim_batch(:w1, 10, 30)), 0::bigint, 'nothing of the run can be claimed');

set local pgflight.fake_now = '2030-01-01 00:01:00+00';
select pgflight.reclaim_expired() \gset
select is(pgflight_test.status(:c1), 'cancelled', 'when its lease lapses the attempt ends cancelled');
select results_eq(format('select was_running, cancelled, cancel_requested from pgflight.cancel_run(%s)', :run_id),
                  $$values (false, 0, 0)$$, 'cancelling again is a no-op');
select throws_ok('select pgflight.cancel_run(-1)', 'ZF003', null, 'an unknown run is ZF003');

select * from finish();
rollback;
