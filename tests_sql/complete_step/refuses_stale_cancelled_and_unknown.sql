-- A stale writer never changes state (invariant 2): after a reclaim the old token is ZF001; a
-- cancelled attempt is ZF002; an unknown attempt is ZF003. The refusal is on record once the
-- worker calls record_stale_write, and nothing completes after cancel (invariant 7).
begin;
\ir ../_helpers.psql
select plan(9);

select run_id, step_id, attempt_id as a1, token as t1 from pgflight_test.hold(:w1, 'r', '{"backoff": {"base_s": 0}}', 5) \gset
set local pgflight.fake_now = '2030-01-01 00:00:06+00';
select is(pgflight.reclaim_expired(), 1, 'the expired lease is reclaimed');
select attempt_id as a2, token as t2 from pgflight_test.take(:w2, 'r') \gset

create temp table before on commit drop as select * from pgflight.step_attempts where step_id = :step_id;
select throws_ok(format('select pgflight.complete_step(%s, %s, %L)', :a1, :t1, '{"late": true}'), 'ZF001', null,
                 'the reclaimed holder''s completion is ZF001');
select throws_ok(format('select pgflight.complete_step(%s, %s, %L)', :a2, :t1, '{"late": true}'), 'ZF001', null,
                 'the old token on the new attempt is ZF001');
select set_eq('select * from pgflight.step_attempts where step_id = ' || :step_id, 'select * from before',
              'the refused writes changed no attempt');
select ok(pgflight.record_stale_write(:a1, :t1, 'complete'), 'record_stale_write logs the refusal');
select is(pgflight_test.events(:run_id, :step_id, 'stale_result_rejected'), 1::bigint, 'as one stale_result_rejected event');

select pgflight.cancel_run(:run_id) \gset
select throws_ok(format('select pgflight.complete_step(%s, %s, %L)', :a2, :t2, '{}'), 'ZF002', null,
                 'completing a cancelled attempt is ZF002');
select is(pgflight_test.status(:step_id), 'cancel_requested', 'and the step does not succeed');
select throws_ok('select pgflight.complete_step(-1, 1)', 'ZF003', null, 'an unknown attempt is ZF003');

select * from finish();
rollback;
