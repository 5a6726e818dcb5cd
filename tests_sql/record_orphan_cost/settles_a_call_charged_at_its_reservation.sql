-- A call whose attempt ended with its request out is charged at its reservation (costs
-- unknown_outcome, budgets, agent totals) when the reservation is ended; a reservation taken
-- ahead of its call (record_model_call's next call, while the tools run) is released instead;
-- the late answer of the call out, recorded by record_orphan_cost, settles the row to the real
-- figures and moves the budgets and totals by the difference.
begin;
\ir ../_helpers.psql
select plan(9);

update pgflight.workspaces set daily_usd_cap = 10 where name = 'test';
select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id from pgflight.begin_agent_run(:attempt_id, :token, '{"model": "claude-haiku-4-5"}') \gset

-- call 1 recorded, and call 2 reserved ahead (0.2) while its tools run: not out
select pgflight.reserve_budget(:attempt_id, :token, :agent_run_id, 1, 0.1);
select pgflight.record_model_call(:attempt_id, :token, :agent_run_id, 1,
  '[{"type": "tool_use", "id": "t1", "name": "note", "input": {}}]', '{"input_tokens": 1000}', 'claude-haiku-4-5',
  '{"mark_tools": true}', 0.2);
select is((select reserved_call_out from pgflight.agent_runs where id = :agent_run_id), false, 'a reservation taken ahead is not out');
-- the tool results stored and call 2 re-priced (0.3) just before its request leaves: out
select pgflight.complete_tool_calls(:attempt_id, :token, :agent_run_id,
  '[{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]', 2, 0.3);
select results_eq(format('select reserved_usd, reserved_call_out from pgflight.agent_runs where id = %s', :agent_run_id),
  $$values (0.3::numeric, true)$$, 're-priced with its tool results and marked out');

-- the attempt lapses with the call out: the sweep charges the reservation
update pgflight.step_attempts set lease_expires_at = pgflight._now() - interval '1 s' where id = :attempt_id;
select pgflight.reclaim_expired();
select is(pgflight.enforce_budgets(), 1, 'the reservation is ended');
select results_eq(format('select iteration, unknown_outcome, lease_lost, usd, input_tokens from pgflight.costs
                           where agent_run_id = %s and unknown_outcome', :agent_run_id),
  $$values (2, true, true, 0.3::numeric(16, 8), 0::bigint)$$, 'a costs row of unknown outcome at the reservation');
select results_eq(format('select spent_usd, reserved_usd from pgflight.budgets where scope = ''workspace_day'' and workspace_id = %s', :ws),
  $$values (0.301::numeric, 0::numeric)$$, 'spent on the budget it was reserved on');
select is((select usd from pgflight.agent_runs where id = :agent_run_id), 0.301::numeric, 'in the agent''s total');

-- the answer comes after all: settled to its real figures (2000 input tokens: 0.002 USD)
select results_eq(format('select usd, recorded from pgflight.record_orphan_cost(%s, %s, %s, 2, ''{"input_tokens": 2000}'', ''claude-haiku-4-5'')',
                         :attempt_id, :token, :agent_run_id),
  $$values (0.002::numeric, true)$$, 'the late answer is recorded');
select results_eq(format('select unknown_outcome, usd, input_tokens from pgflight.costs where agent_run_id = %s and iteration = 2', :agent_run_id),
  $$values (false, 0.002::numeric(16, 8), 2000::bigint)$$, 'the row holds the real figures');
select results_eq(format('select b.spent_usd, r.usd from pgflight.budgets b, pgflight.agent_runs r
                           where b.scope = ''workspace_day'' and b.workspace_id = %s and r.id = %s', :ws, :agent_run_id),
  $$values (0.003::numeric, 0.003::numeric)$$, 'the budget and the total moved by the difference');

select * from finish();
rollback;
