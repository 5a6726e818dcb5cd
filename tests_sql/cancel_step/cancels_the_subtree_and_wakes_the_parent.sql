-- cancel_step cancels a child and everything under it; the parent, waiting on that child only,
-- wakes once. Cancelling a root step cancels the run; an unknown step is ZF003.
begin;
\ir ../_helpers.psql
select plan(7);

select run_id, root, root_a, root_t from pgflight_test.parked_parent(:w1, pgflight_test.children(1)) \gset
select attempt_id as c1_a, token as c1_t, step_id as c1 from pgflight_test.take(:w1, 'child') \gset
select pgflight.spawn_children(:c1_a, :c1_t, pgflight_test.children(2, 'grandchild')) \gset

select results_eq(format('select cancelled, cancel_requested from pgflight.cancel_step(%s)', :c1),
                  $$values (3, 0)$$, 'the parked child and its two queued grandchildren are cancelled');
select is((select count(*) from pgflight.step_status where parent_id = :c1 and status = 'cancelled'), 2::bigint,
          'every grandchild is cancelled');
select is(pgflight_test.status(:root), 'queued', 'the root, waiting on that child only, is requeued');
select is(pgflight_test.events(:run_id, :root, 'parent_resumed'), 1::bigint, 'and woken exactly once');
select is((select status from pgflight.runs where id = :run_id), 'running', 'the run goes on');
select results_eq(format('select cancelled from pgflight.cancel_step(%s)', :root), $$values (1)$$, 'cancelling the root step cancels the run');
select throws_ok('select pgflight.cancel_step(-1)', 'ZF003', null, 'an unknown step is ZF003');

select * from finish();
rollback;
