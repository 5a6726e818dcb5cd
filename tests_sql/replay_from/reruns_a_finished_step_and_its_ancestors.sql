-- replay_from runs a finished child again and reopens its finished parent in awaiting_children,
-- so the parent runs again once the child ends; the run is running again. A step that is not
-- terminal is ZF006.
begin;
\ir ../_helpers.psql
select plan(7);

select run_id, root, root_a, root_t from pgflight_test.parked_parent(:w1, pgflight_test.children(1)) \gset
select attempt_id as c_a, token as c_t, step_id as c1 from pgflight_test.take(:w1, 'child') \gset
select throws_ok(format('select pgflight.replay_from(%s)', :c1), 'ZF006', null, 'a running step cannot be replayed');
select pgflight.complete_step(:c_a, :c_t, '{"v": 1}') \gset
select attempt_id as r_a, token as r_t from pgflight_test.take(:w1, 'r') \gset
select pgflight.complete_step(:r_a, :r_t, '{"done": 1}') \gset

select pgflight.replay_from(:c1, 'ops') as fresh \gset
select results_eq(format('select attempt_no, status from pgflight.step_status where step_id = %s', :c1),
                  $$values (2, 'queued')$$, 'the child runs again as attempt 2');
select results_eq(format('select attempt_no, status from pgflight.step_status where step_id = %s', :root),
                  $$values (2, 'awaiting_children')$$, 'the parent is reopened waiting for it');
select is((select status from pgflight.runs where id = :run_id), 'running', 'the run is running again');
select attempt_id as c2_a, token as c2_t from pgflight_test.take(:w1, 'child') \gset
select pgflight.complete_step(:c2_a, :c2_t, '{"v": 2}') \gset
select is(pgflight_test.status(:root), 'queued', 'the replayed child''s end wakes the parent');
select is((select result from pgflight.step_attempts where step_id = :c1 and attempt_no = 1), '{"v": 1}'::jsonb, 'history is kept');
select throws_ok('select pgflight.replay_from(-1)', 'ZF003', null, 'an unknown step is ZF003');

select * from finish();
rollback;
