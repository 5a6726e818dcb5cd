-- spawn_children creates queued child steps and parks the parent in awaiting_children, giving up
-- its lease; the woken parent, run again, spawning the same keys creates nothing and is not
-- parked again, because every child named is already terminal.
begin;
\ir ../_helpers.psql
select plan(9);

select run_id, step_id as root, attempt_id as root_a, token as root_t from pgflight_test.hold(:w1) \gset
select results_eq(format('select children_total, created, parked from pgflight.spawn_children(%s, %s, %L)', :root_a, :root_t, pgflight_test.children(2)),
                  $$values (2, 2, true)$$, 'two children created, the parent parked');
select is(pgflight_test.status(:root), 'awaiting_children', 'the parent waits');
select results_eq(format('select st.step_key, st.depth, st.status, s.input from pgflight.step_status st join pgflight.steps s on s.id = st.step_id where st.parent_id = %s order by 1', :root),
                  $$values ('c1', 1, 'queued', '{"n": 1}'::jsonb), ('c2', 1, 'queued', '{"n": 2}'::jsonb)$$,
                  'the children are queued at depth 1 with their inputs');
select is((select children_pending from pgflight.steps where id = :root), 2, 'two children pending');
select results_eq(format('select status from pgflight.heartbeat(%s, array[%s]::bigint[], array[%s]::bigint[])', :w1, :root_a, :root_t),
                  $$values ('lease_lost')$$, 'the parked parent no longer holds a lease');
select throws_ok(format('select pgflight.spawn_children(%s, %s, %L)', :root_a, :root_t, pgflight_test.children(2)), 'ZF001', null,
                 'the parked attempt with its old token cannot spawn again');

select attempt_id as a, token as t from pgflight_test.take(:w1, 'child') \gset
select pgflight.complete_step(:a, :t) \gset
select attempt_id as a, token as t from pgflight_test.take(:w1, 'child') \gset
select pgflight.complete_step(:a, :t) \gset
select attempt_id as again_a, token as again_t from pgflight_test.take(:w1, 'r') \gset
select results_eq(format('select children_total, created, parked from pgflight.spawn_children(%s, %s, %L)', :again_a, :again_t, pgflight_test.children(2)),
                  $$values (2, 0, false)$$, 'the same keys again create nothing and do not park');
select is((select count(*) from pgflight.steps where parent_id = :root), 2::bigint, 'still two children');
select is(pgflight_test.status(:root), 'running', 'the parent keeps running and reads children_results');

select * from finish();
rollback;
