-- children_results gives a woken parent each child in key order with the status, result and
-- error of its latest attempt.
begin;
\ir ../_helpers.psql
select plan(2);

select run_id, root, root_a, root_t from pgflight_test.parked_parent(:w1, '[{"key": "b", "recipe": "child"}, {"key": "a", "recipe": "child", "options": {"max_attempts": 1}}]') \gset
select attempt_id as a, token as t from pgflight_test.take(:w1, 'child') \gset
select pgflight.complete_step(:a, :t, '{"v": "b"}') \gset
select attempt_id as a, token as t from pgflight_test.take(:w1, 'child') \gset
select pgflight.fail_step(:a, :t, '{"message": "no"}') \gset

select results_eq(format('select step_key, status, attempt_no, result, error from pgflight.children_results(%s)', :root),
                  $$values ('a', 'dead_letter', 1, null::jsonb, '{"message": "no"}'::jsonb),
                           ('b', 'succeeded', 1, '{"v": "b"}'::jsonb, null::jsonb)$$,
                  'children in key order with status, result and error');
select is_empty(format('select * from pgflight.children_results(%s)', pgflight_test.child(:root, 'a')), 'a leaf has no children');

select * from finish();
rollback;
