-- enforce_budgets: a run over its max_usd while its root waits for children is cancelled once.
begin;
\ir ../_helpers.psql
select plan(3);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent', '{"max_usd": 1}') \gset
select agent_run_id from pgflight.begin_agent_run(:attempt_id, :token, '{"model": "claude-haiku-4-5"}') \gset
select pgflight.spawn_children(:attempt_id, :token, '[{"key": "c", "recipe": "agent", "input": {}}]');
update pgflight.budgets set spent_usd = 1.2 where run_id = :run_id and scope = 'run';
select is(pgflight.enforce_budgets(), 1, 'one tree cancelled');
select is((select status from pgflight.runs where id = :run_id), 'cancelled', 'the run is cancelled');
select is(pgflight.enforce_budgets(), 0, 'only once');

select * from finish();
rollback;
