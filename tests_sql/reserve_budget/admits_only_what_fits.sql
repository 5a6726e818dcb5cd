-- reserve_budget: admission is atomic per budget; a reservation that does not fit is ZF007 with
-- DETAIL naming the budget; the same (attempt, iteration) again returns the held reservation;
-- record_model_call replaces the reservation by the actual cost.
begin;
\ir ../_helpers.psql
select plan(6);

update pgflight.workspaces set daily_usd_cap = 1.00 where name = 'test';
select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id from pgflight.begin_agent_run(:attempt_id, :token, '{"model": "claude-haiku-4-5"}') \gset

select results_eq(format('select reserved_usd from pgflight.reserve_budget(%s, %s, %s, 1, 0.6)', :attempt_id, :token, :agent_run_id),
  $$values (0.6::numeric)$$, 'a reservation that fits is admitted');
select results_eq(format('select reserved_usd from pgflight.reserve_budget(%s, %s, %s, 1, 0.6)', :attempt_id, :token, :agent_run_id),
  $$values (0.6::numeric)$$, 'the same iteration again returns the held reservation');
select is((select reserved_usd from pgflight.budgets where scope = 'workspace_day'), 0.6::numeric, 'reserved once');

select run_id as run2, step_id as step2, attempt_id as att2, token as tok2 from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id as ar2 from pgflight.begin_agent_run(:att2, :tok2, '{"model": "claude-haiku-4-5"}') \gset
select throws_like(format('select pgflight.reserve_budget(%s, %s, %s, 1, 0.5)', :att2, :tok2, :ar2),
  'budget exceeded: workspace_day budget%', 'a reservation that does not fit is ZF007 naming the budget');

select pgflight.record_model_call(:attempt_id, :token, :agent_run_id, 1, '[]',
  '{"input_tokens": 100000}', 'claude-haiku-4-5');
select results_eq($$select spent_usd, reserved_usd from pgflight.budgets where scope = 'workspace_day'$$,
  $$values (0.1::numeric, 0::numeric)$$, 'recording replaces the reservation by the actual cost');
select lives_ok(format('select pgflight.reserve_budget(%s, %s, %s, 1, 0.5)', :att2, :tok2, :ar2),
  'the freed money admits the other agent');

select * from finish();
rollback;
