-- With fail_fast the first child that ends unsuccessfully dead-letters the parent (reason
-- child_failed) and cancels its siblings; the run fails.
begin;
\ir ../_helpers.psql
select plan(5);

select run_id, root, root_a, root_t from pgflight_test.parked_parent(:w1, pgflight_test.children(3), '{"fail_fast": true}') \gset
select attempt_id as a, token as t, step_id as failing from pgflight_test.take(:w1, 'child') \gset
select pgflight.fail_step(:a, :t, '{"message": "fatal"}', '{"retryable": false}') \gset

select results_eq(format('select status, reason from pgflight.step_status where step_id = %s', :root),
                  $$values ('dead_letter', 'child_failed')$$, 'the parent is dead-lettered: child_failed');
select is((select count(*) from pgflight.step_status where parent_id = :root and status = 'cancelled'), 2::bigint,
          'the two siblings are cancelled');
select is((select status from pgflight.runs where id = :run_id), 'failed', 'the run failed');
select is(pgflight_test.events(:run_id, :root, 'parent_resumed'), 0::bigint, 'the parent never resumed');
select is(pgflight_test.stranded(), 0::bigint, 'nothing is stranded');

select * from finish();
rollback;
