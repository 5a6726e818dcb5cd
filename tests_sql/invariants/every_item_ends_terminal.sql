-- Invariants 5 and 10 (docs/state_machine.md) on one mixed run: children that succeed, fail through
-- retries to a dead letter, lose their lease, and get cancelled; when the run is finished every
-- step is terminal, nothing is stranded, and every failure was counted by the engine.
begin;
\ir ../_helpers.psql
select plan(5);

select run_id, step_id as root, attempt_id as root_a, token as root_t from pgflight_test.hold(:w1) \gset
select pgflight.spawn_children(:root_a, :root_t, (select jsonb_agg(jsonb_build_object('key', k, 'recipe', k,
       'options', '{"max_attempts": 2, "backoff": {"base_s": 0, "jitter": 0}}'::jsonb)) from unnest(array['c1', 'c2', 'c3', 'c4']) k)) \gset
-- c1 succeeds
select attempt_id as a, token as t from pgflight_test.take(:w1, 'c1') \gset
select pgflight.complete_step(:a, :t) \gset
-- c2 fails twice: dead letter
select attempt_id as a, token as t, step_id as c2 from pgflight_test.take(:w1, 'c2', 5) \gset
select pgflight.fail_step(:a, :t, '{"message": "1"}') \gset
select attempt_id as a, token as t from pgflight_test.take(:w1, 'c2', 5) \gset
select pgflight.fail_step(:a, :t, '{"message": "2"}') \gset
-- c3 loses its lease twice (the worker "died"): dead letter via reclaim inside claim_batch
select attempt_id as a, token as t, step_id as c3 from pgflight_test.take(:w1, 'c3', 5) \gset
set local pgflight.fake_now = '2030-01-01 00:00:06+00';
select attempt_id as a, token as t from pgflight_test.take(:w2, 'c3', 5) \gset
set local pgflight.fake_now = '2030-01-01 00:00:12+00';
select pgflight.reclaim_expired() \gset
-- c4 is cancelled
select pgflight.cancel_step(pgflight_test.child(:root, 'c4')) \gset
-- the woken root finishes the run
select attempt_id as a, token as t from pgflight_test.take(:w1, 'r') \gset
select pgflight.complete_step(:a, :t) \gset

select is((select status from pgflight.runs where id = :run_id), 'succeeded', 'the run finished');
select is_empty(format($$select step_id, status from pgflight.step_status where run_id = %s
                          and status not in ('succeeded', 'dead_letter', 'cancelled')$$, :run_id),
                'audit: every step of the finished run is terminal');
select results_eq(format('select step_key, status, failed_attempts from pgflight.step_status where parent_id = %s order by step_key', :root),
                  $$values ('c1', 'succeeded', 0), ('c2', 'dead_letter', 2), ('c3', 'dead_letter', 2), ('c4', 'cancelled', 0)$$,
                  'each child ended by its own path, failures counted by the engine');
select is(pgflight_test.stranded(), 0::bigint, 'no step is queued past its ceiling');
select is(pgflight_test.events(:run_id, :root, 'parent_resumed'), 1::bigint, 'the parent resumed exactly once');

select * from finish();
rollback;
