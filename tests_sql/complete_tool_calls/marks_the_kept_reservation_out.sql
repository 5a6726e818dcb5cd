-- The reservation record_model_call made for the next call is held while the tools run
-- (reserved_call_out false: an attempt that ends then gives it back, uncharged). complete_tool_calls
-- with that next iteration and the same estimate keeps it and marks it out (its request leaves
-- next: an attempt that ends now is charged for it), without moving any money; a repeat of the call
-- changes nothing; a call that re-prices it marks it out at the new price; results stored without
-- next_iteration give it back.
begin;
\ir ../_helpers.psql
select plan(9);

update pgflight.workspaces set daily_usd_cap = 1.00 where name = 'test';
select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id from pgflight.begin_agent_run(:attempt_id, :token, '{"model": "claude-haiku-4-5", "task": "t"}') \gset
select pgflight.reserve_budget(:attempt_id, :token, :agent_run_id, 1, 0.1);
select pgflight.record_model_call(:attempt_id, :token, :agent_run_id, 1,
  '[{"type": "tool_use", "id": "a", "name": "note", "input": {}}]', '{"input_tokens": 100000}',
  'claude-haiku-4-5', '{"mark_tools": true}', 0.2);

create function pgflight_test.reservation(p_agent_run_id bigint) returns table (iteration integer, usd numeric, call_out boolean, day_reserved numeric)
language sql as $$
  select r.reserved_iteration, r.reserved_usd, r.reserved_call_out, b.reserved_usd
    from pgflight.agent_runs r
    join pgflight.budgets b on b.scope = 'workspace_day' and b.workspace_id = r.workspace_id
   where r.id = p_agent_run_id
$$;

select results_eq(format('select * from pgflight_test.reservation(%s)', :agent_run_id),
  $$values (2, 0.2::numeric, false, 0.2::numeric)$$, 'held while the tools run: not out');

select results_eq(format($$select stored, reserved, reserved_usd, refusal from pgflight.complete_tool_calls(%s, %s, %s,
    '[{"type": "tool_result", "tool_use_id": "a", "content": "A"}]', 2, 0.2)$$, :attempt_id, :token, :agent_run_id),
  $$values (array['a'], true, 0.2::numeric, null::jsonb)$$, 'the results stored and the reservation kept');
select results_eq(format('select * from pgflight_test.reservation(%s)', :agent_run_id),
  $$values (2, 0.2::numeric, true, 0.2::numeric)$$, 'kept as it was and marked out; no money moved');

select results_eq(format($$select stored, reserved, reserved_usd from pgflight.complete_tool_calls(%s, %s, %s,
    '[{"type": "tool_result", "tool_use_id": "a", "content": "again"}]', 2, 0.2)$$, :attempt_id, :token, :agent_run_id),
  $$values ('{}'::text[], true, 0.2::numeric)$$, 'a repeat stores nothing (the first result wins) and keeps the reservation');
select results_eq(format('select * from pgflight_test.reservation(%s)', :agent_run_id),
  $$values (2, 0.2::numeric, true, 0.2::numeric)$$, 'still out, nothing reserved twice');
select results_eq(format($$select content ->> 'content' from pgflight.traces where agent_run_id = %s and block_type = 'tool_result'$$,
    :agent_run_id),
  $$values ('A')$$, 'the first result is the one kept');

-- iteration 2 re-priced: out at the new price
select pgflight.record_model_call(:attempt_id, :token, :agent_run_id, 2,
  '[{"type": "tool_use", "id": "b", "name": "note", "input": {}}]', '{"input_tokens": 100000}',
  'claude-haiku-4-5', '{"mark_tools": true}', 0.2);
select pgflight.complete_tool_calls(:attempt_id, :token, :agent_run_id,
  '[{"type": "tool_result", "tool_use_id": "b", "content": "B"}]', 3, 0.3);
select results_eq(format('select * from pgflight_test.reservation(%s)', :agent_run_id),
  $$values (3, 0.3::numeric, true, 0.3::numeric)$$, 're-priced: out at the price of the request about to be sent');

-- iteration 3's results stored before parking: given back, not out
select pgflight.record_model_call(:attempt_id, :token, :agent_run_id, 3,
  '[{"type": "tool_use", "id": "c", "name": "note", "input": {}}]', '{"input_tokens": 100000}',
  'claude-haiku-4-5', '{"mark_tools": true}', 0.2);
select results_eq(format('select * from pgflight_test.reservation(%s)', :agent_run_id),
  $$values (4, 0.2::numeric, false, 0.2::numeric)$$, 'iteration 4 held while the tools of 3 run');
select pgflight.complete_tool_calls(:attempt_id, :token, :agent_run_id,
  '[{"type": "tool_result", "tool_use_id": "c", "content": "C"}]');
select results_eq(format('select * from pgflight_test.reservation(%s)', :agent_run_id),
  $$values (null::integer, 0::numeric, false, 0::numeric)$$, 'results without next_iteration give it back, not out');

select * from finish();
rollback;
