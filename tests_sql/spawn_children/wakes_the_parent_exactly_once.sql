-- Invariant 6: the parent leaves awaiting_children exactly once, after every child is terminal
-- by any path (success, dead letter, cancel), with one parent_resumed event; the sweep finds
-- nothing left to wake.
begin;
\ir ../_helpers.psql
select plan(7);

select run_id, root, root_a, root_t from pgflight_test.parked_parent(:w1, pgflight_test.children(3, 'child', '{"max_attempts": 1}')) \gset

select attempt_id as a, token as t from pgflight_test.take(:w1, 'child') \gset
select pgflight.complete_step(:a, :t, '{"v": 1}') \gset
select is(pgflight_test.status(:root), 'awaiting_children', 'one child done: still waiting');
select attempt_id as a, token as t from pgflight_test.take(:w1, 'child') \gset
select pgflight.fail_step(:a, :t, '{"message": "bad doc"}') \gset
select is(pgflight_test.status(:root), 'awaiting_children', 'a dead-lettered child: still waiting (not fail_fast)');
select pgflight.cancel_step(pgflight_test.child(:root, 'c3')) \gset
select is(pgflight_test.status(:root), 'queued', 'the last child (cancelled) wakes the parent');
select is(pgflight_test.events(:run_id, :root, 'parent_resumed'), 1::bigint, 'exactly one parent_resumed event');
select is(pgflight.wake_parents(), 0, 'the sweep has nothing left to wake');
select is(pgflight_test.events(:run_id, :root, 'parent_resumed'), 1::bigint, 'still one parent_resumed event');
select attempt_id as r2, token as rt2 from pgflight_test.take(:w1, 'r') \gset
select ok(:r2 = :root_a and :rt2 > :root_t, 'the parent runs again on the same attempt with a new token');

select * from finish();
rollback;
