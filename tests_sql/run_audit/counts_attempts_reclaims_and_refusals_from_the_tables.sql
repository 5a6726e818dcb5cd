-- run_audit: a run's audit counted from the tables. Three children: c1 succeeds at once; c2's
-- worker dies, its lease lapses and is reclaimed, its late write is refused and logged, and the
-- retry succeeds; c3 fails fatally (dead letter). An unknown run is ZF003.
begin;
\ir ../_helpers.psql
select plan(4);

select run_id, root from pgflight_test.parked_parent(:w1, pgflight_test.children(3, 'child', '{"max_attempts": 3}')) \gset
select attempt_id as a, token as t from pgflight_test.take(:w1, 'child', 10) \gset
select pgflight.complete_step(:a, :t) \gset
select attempt_id as a2, token as t2 from pgflight_test.take(:w1, 'child', 10) \gset
select attempt_id as a3, token as t3 from pgflight_test.take(:w1, 'child', 10) \gset
select pgflight.fail_step(:a3, :t3, '{"message": "fatal"}', '{"retryable": false}') \gset

set local pgflight.fake_now = '2030-01-01 00:00:20+00';
select pgflight.reclaim_expired() \gset
select throws_ok(format('select pgflight.complete_step(%s, %s)', :a2, :t2), 'ZF001', null,
                 'the dead worker''s late write is refused');
select pgflight.record_stale_write(:a2, :t2, 'complete_step') \gset

select results_eq(format('select steps, attempts, retries, reclaimed_attempts, stale_writes_rejected, dead_letters,
                                 steps_succeeded, steps_unfinished, steps_succeeded_twice, model_calls, usd
                            from pgflight.run_audit(%s)', :run_id),
                  $$values (4::bigint, 5::bigint, 1::bigint, 1::bigint, 1::bigint, 1::bigint,
                            1::bigint, 2::bigint, 0::bigint, 0::bigint, 0::numeric)$$,
                  'a reclaim, a refused write and a dead letter are counted while the run goes on');

set local pgflight.fake_now = '2030-01-01 01:00:00+00';
select attempt_id as a, token as t from pgflight_test.take(:w2, 'child', 10) \gset
select pgflight.complete_step(:a, :t) \gset
select attempt_id as a, token as t from pgflight_test.take(:w2, 'r') \gset
select pgflight.complete_step(:a, :t, '{"report": "ok"}') \gset
select results_eq(format('select status, steps, attempts, retries, steps_succeeded, steps_unfinished,
                                 steps_succeeded_twice, wall_time_s from pgflight.run_audit(%s)', :run_id),
                  $$values ('succeeded', 4::bigint, 5::bigint, 1::bigint, 3::bigint, 0::bigint, 0::bigint,
                            3600::double precision)$$,
                  'the finished run: every step terminal, each succeeded once, wall time from submission to end');
select throws_ok('select pgflight.run_audit(-1)', 'ZF003', null, 'an unknown run is ZF003');

select * from finish();
rollback;
