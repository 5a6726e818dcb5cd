-- run_status: the run's status, its steps counted by the status of their latest attempt, the
-- attempts made, and the root's result. An unknown run is ZF003.
begin;
\ir ../_helpers.psql
select plan(3);

select run_id, root, root_a, root_t from pgflight_test.parked_parent(:w1, pgflight_test.children(3, 'child', '{"max_attempts": 1}')) \gset
select attempt_id as a, token as t from pgflight_test.take(:w1, 'child') \gset
select pgflight.complete_step(:a, :t) \gset
select attempt_id as a, token as t from pgflight_test.take(:w1, 'child') \gset
select pgflight.fail_step(:a, :t, null) \gset

select results_eq(format('select workspace, recipe, status, steps_total, steps_queued, steps_running, steps_waiting,
                                 steps_succeeded, steps_dead_letter, steps_cancelled, attempts_total from pgflight.run_status(%s)', :run_id),
                  $$values ('test', 'r', 'running', 4::bigint, 1::bigint, 0::bigint, 1::bigint, 1::bigint, 1::bigint, 0::bigint, 4::bigint)$$,
                  'one waiting root, one queued, one succeeded, one dead-lettered child');
select attempt_id as a, token as t from pgflight_test.take(:w1, 'child') \gset
select pgflight.complete_step(:a, :t) \gset
select attempt_id as a, token as t from pgflight_test.take(:w1, 'r') \gset
select pgflight.complete_step(:a, :t, '{"report": "ok"}') \gset
select results_eq(format('select status, steps_succeeded, result from pgflight.run_status(%s)', :run_id),
                  $$values ('succeeded', 3::bigint, '{"report": "ok"}'::jsonb)$$, 'a finished run shows the root result');
select throws_ok('select pgflight.run_status(-1)', 'ZF003', null, 'an unknown run is ZF003');

select * from finish();
rollback;
