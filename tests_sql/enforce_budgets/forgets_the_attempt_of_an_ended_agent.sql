-- The reservation keeps its attempt between iterations (tables/agent_runs_hot: the updates of an
-- iteration change no indexed column, so they are HOT); enforce_budgets ends a lapsed attempt's
-- held reservation (counted: charged as a cost of unknown outcome, since its call was out) and forgets the attempt of an agent whose attempt ended
-- with nothing held (not counted), so agent_runs_reserved_idx keeps only live agents.
begin;
\ir ../_helpers.psql
select plan(8);
select pgflight.enforce_budgets(1000000);  -- whatever the database held before: the counts below are this test's

update pgflight.workspaces set daily_usd_cap = 10 where name = 'test';
select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id from pgflight.begin_agent_run(:attempt_id, :token, '{"model": "claude-haiku-4-5"}') \gset
select pgflight.reserve_budget(:attempt_id, :token, :agent_run_id, 1, 0.5);
select pgflight.record_model_call(:attempt_id, :token, :agent_run_id, 1, '[]', '{"input_tokens": 1000}', 'claude-haiku-4-5');
select results_eq(format('select reserved_attempt_id, reserved_iteration, reserved_usd from pgflight.agent_runs where id = %s', :agent_run_id),
  format('values (%s::bigint, null::integer, 0::numeric)', :attempt_id),
  'settled: nothing held, the attempt kept');
select pgflight.reserve_budget(:attempt_id, :token, :agent_run_id, 2, 0.5);
select is((select reserved_usd from pgflight.budgets where scope = 'workspace_day' and workspace_id = :ws), 0.5::numeric, 'the next call reserved');
select is(pgflight.enforce_budgets(), 0, 'a live attempt''s reservation is left alone');

-- the attempt lapses holding the reservation: released and counted
update pgflight.step_attempts set lease_expires_at = pgflight._now() - interval '1 s' where id = :attempt_id;
select pgflight.reclaim_expired();
select is(pgflight.enforce_budgets(), 1, 'the lapsed attempt''s reservation is ended');
select is((select reserved_usd from pgflight.budgets where scope = 'workspace_day' and workspace_id = :ws), 0::numeric,
  'nothing is held any more');
select is((select spent_usd from pgflight.budgets where scope = 'workspace_day' and workspace_id = :ws), 0.501::numeric,
  'its call was out (admitted by reserve_budget): charged at its reservation, with the recorded call');

-- an agent whose attempt ended with nothing held: forgotten, not counted
select run_id as run2, attempt_id as att2, token as tok2 from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id as ar2 from pgflight.begin_agent_run(:att2, :tok2, '{"model": "claude-haiku-4-5"}') \gset
select pgflight.reserve_budget(:att2, :tok2, :ar2, 1, 0.5);
select pgflight.record_model_call(:att2, :tok2, :ar2, 1, '[]', '{"input_tokens": 1000}', 'claude-haiku-4-5');
select pgflight.complete_step(:att2, :tok2, '{}');
select is(pgflight.enforce_budgets(), 0, 'nothing was held, nothing counted');
select is((select count(*) from pgflight.agent_runs where reserved_attempt_id is not null), 0::bigint,
  'both agents left agent_runs_reserved_idx');

select * from finish();
rollback;
