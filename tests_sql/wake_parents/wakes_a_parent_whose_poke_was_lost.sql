-- wake_parents is the safety net of fan-in: a parent parked with no children pending (a lost
-- poke) is requeued once; one still waiting on a child is left alone.
begin;
\ir ../_helpers.psql
select plan(4);

select run_id, root, root_a, root_t from pgflight_test.parked_parent(:w1, pgflight_test.children(1)) \gset
select is(pgflight.wake_parents(), 0, 'a parent with a pending child is not woken');
update pgflight.steps set children_pending = 0 where id = :root;  -- simulate the lost poke
select is(pgflight.wake_parents(), 1, 'the stalled parent is woken');
select is(pgflight_test.status(:root), 'queued', 'it is queued again');
select is(pgflight.wake_parents(), 0, 'a second sweep wakes nothing');

select * from finish();
rollback;
