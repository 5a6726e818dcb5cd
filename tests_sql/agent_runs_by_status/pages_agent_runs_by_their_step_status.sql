-- agent_runs_by_status: the agent runs whose step ended with the given status, oldest first,
-- keyset-paged by agent run id (what export-dataset reads).
begin;
\ir ../_helpers.psql
select plan(3);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id as a1 from pgflight.begin_agent_run(:attempt_id, :token, '{"model": "offline", "task": "one"}') \gset
select pgflight.complete_step(:attempt_id, :token, '{"answer": 1}');
select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id as a2 from pgflight.begin_agent_run(:attempt_id, :token, '{"model": "offline", "task": "two"}') \gset

select results_eq($$select agent_run_id from pgflight.agent_runs_by_status('succeeded')$$,
  format('values (%s::bigint)', :a1), 'only the succeeded agent run');
select is_empty(format($$select * from pgflight.agent_runs_by_status('succeeded', %s)$$, :a1),
  'the page after it is empty');
select pgflight.complete_step(:attempt_id, :token, '{"answer": 2}');
select results_eq($$select agent_run_id from pgflight.agent_runs_by_status('succeeded', 0, 10)$$,
  format('values (%s::bigint), (%s::bigint)', :a1, :a2), 'oldest first once both succeeded');

select * from finish();
rollback;
