-- reserve_budget / complete_tool_calls and the workspace's model_tokens_per_min: a call
-- is admitted while the tokens of the rolling minute plus the agent's estimate (its average per call)
-- fit; past that, ZF013 with DETAIL used/limit/estimate/window and retry_after_s (when the oldest
-- bucket leaves the window), nothing reserved; complete_tool_calls returns the same refusal; once
-- the window has passed the call is admitted; another workspace is not affected.
begin;
\ir ../_helpers.psql
select plan(10);

create function pgflight_test.refusal(p_sql text) returns text language plpgsql as $$
declare
  v_state text;
  v_detail text;
begin
  execute p_sql;
  return 'admitted';
exception when others then
  get stacked diagnostics v_state = returned_sqlstate, v_detail = pg_exception_detail;
  return v_state || ' ' || v_detail;
end
$$;

select pgflight.set_workspace_limits('test', '{"model_tokens_per_min": 3000}');
set local pgflight.fake_now = '2030-01-01 00:00:02+00';
select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id from pgflight.begin_agent_run(:attempt_id, :token, '{"model": "claude-haiku-4-5"}') \gset

select lives_ok(format('select pgflight.reserve_budget(%s, %s, %s, 1, 0)', :attempt_id, :token, :agent_run_id),
  'the first call of an empty window is admitted');
select pgflight.record_model_call(:attempt_id, :token, :agent_run_id, 1, '[]',
  '{"input_tokens": 1000, "output_tokens": 500}', 'claude-haiku-4-5');
select lives_ok(format('select pgflight.reserve_budget(%s, %s, %s, 2, 0)', :attempt_id, :token, :agent_run_id),
  'used 1500 + estimate 1500 fits a limit of 3000');
select is((select sum(tokens) from pgflight.model_token_windows), 3000::numeric,
  'the admission added the estimate to the window');
select pgflight.record_model_call(:attempt_id, :token, :agent_run_id, 2, '[]',
  '{"input_tokens": 1200, "output_tokens": 600}', 'claude-haiku-4-5');
select is((select sum(tokens) from pgflight.model_token_windows), 3300::numeric,
  'recording replaced the estimate by the actual tokens (1500 + 1800)');

set local pgflight.fake_now = '2030-01-01 00:00:10+00';
select is(pgflight_test.refusal(format('select pgflight.reserve_budget(%s, %s, %s, 3, 0)', :attempt_id, :token, :agent_run_id)),
  format('ZF013 scope=workspace cap=model_tokens_per_min workspace_id=%s used=3300 limit=3000 estimate=1650 '
         'window_s=60 retry_after_s=55 agent_run=%s', :ws, :agent_run_id),
  'over the limit: ZF013 with used, limit, estimate, window and retry_after_s (the bucket of 00:00:00 leaves at 00:01:05)');
select is((select reserved_iteration from pgflight.agent_runs where id = :agent_run_id), null,
  'nothing reserved');
select results_eq(
  format($$select reserved, refusal ->> 'sqlstate', (refusal ->> 'retry_after_s')::integer
             from pgflight.complete_tool_calls(%s, %s, %s, '[]', 3, 0)$$, :attempt_id, :token, :agent_run_id),
  $$values (false, 'ZF013', 55)$$, 'complete_tool_calls hands back the same refusal');

select pgflight.create_workspace('other');
select s.run_id as run2 from pgflight.submit_run('other', 'agent', '{}') s \gset
select attempt_id as att2, token as tok2 from pgflight_test.take(:w2, 'agent') \gset
select agent_run_id as ar2 from pgflight.begin_agent_run(:att2, :tok2, '{"model": "claude-haiku-4-5"}') \gset
select lives_ok(format('select pgflight.reserve_budget(%s, %s, %s, 1, 0)', :att2, :tok2, :ar2),
  'another workspace is not limited');

set local pgflight.fake_now = '2030-01-01 00:01:05.5+00';
select is(pgflight_test.refusal(format('select pgflight.reserve_budget(%s, %s, %s, 3, 0)', :attempt_id, :token, :agent_run_id)),
  'admitted', 'after retry_after_s the window has room again');
set local pgflight.fake_now = '2030-01-01 00:03:10+00';
select pgflight.enforce_budgets();
select is((select count(*) from pgflight.model_token_windows), 0::bigint,
  'enforce_budgets deletes the buckets older than two minutes');

select * from finish();
rollback;
