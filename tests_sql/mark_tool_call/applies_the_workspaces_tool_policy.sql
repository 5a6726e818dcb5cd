-- mark_tool_call applies the workspace's tool policy before it marks a new call: deny stores an
-- error result at once (not counted, never in flight); require_approval opens the gate
-- tool:<id> with the arguments and marks nothing; after an approval with edited arguments the
-- call is marked in flight with the edit, and the transcript records the original, the edit and
-- the decider; a rejection and a message are stored as the result; a policy whose JSON-path
-- condition does not match, or whose over_usd is not reached, allows the call; '*' covers tools
-- without a policy of their own.
begin;
\ir ../_helpers.psql
select plan(17);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'agent') \gset
select agent_run_id from pgflight.begin_agent_run(:attempt_id, :token, '{"model": "offline", "task": "go"}') \gset
select pgflight.record_model_call(:attempt_id, :token, :agent_run_id, 1,
  '[{"type": "tool_use", "id": "d1", "name": "drop_table", "input": {"t": "x"}},
    {"type": "tool_use", "id": "p1", "name": "pay", "input": {"usd": 500}},
    {"type": "tool_use", "id": "p2", "name": "pay", "input": {"usd": 5}},
    {"type": "tool_use", "id": "p3", "name": "pay", "input": {"usd": 900}},
    {"type": "tool_use", "id": "p4", "name": "pay", "input": {"usd": 700}},
    {"type": "tool_use", "id": "n1", "name": "note", "input": {}}]', '{}', 'offline');
select pgflight.set_tool_policy('test', 'drop_table', '{"action": "deny"}');
select pgflight.set_tool_policy('test', 'pay', '{"action": "require_approval", "when": "$.usd ? (@ > 100)"}');
select pgflight.set_tool_policy('test', '*', '{"action": "require_approval", "over_usd": 1}');

select results_eq(format('select previous_status, policy, arguments, content ->> ''is_error'' from pgflight.mark_tool_call(%s, %s, %s, %L)', :attempt_id, :token, :agent_run_id, 'd1'),
  $$values ('completed', 'deny', null::jsonb, 'true')$$, 'a denied call comes back completed with an error result');
select alike((select content ->> 'content' from pgflight.traces where agent_run_id = :agent_run_id and tool_use_id = 'd1' and block_type = 'tool_result'),
  '%tool policy of this workspace denies drop_table%', 'the stored result tells the model the policy denied it');
select results_eq(format('select previous_status, policy, arguments from pgflight.mark_tool_call(%s, %s, %s, %L)', :attempt_id, :token, :agent_run_id, 'p2'),
  $$values ('new', 'allow', '{"usd": 5}'::jsonb)$$, 'a call the condition does not match is allowed and marked');
select results_eq(format('select previous_status, policy from pgflight.mark_tool_call(%s, %s, %s, %L)', :attempt_id, :token, :agent_run_id, 'n1'),
  $$values ('new', 'allow')$$, 'the ''*'' policy under its over_usd allows the call');
select results_eq(format('select trace_id, policy, arguments from pgflight.mark_tool_call(%s, %s, %s, %L)', :attempt_id, :token, :agent_run_id, 'p1'),
  $$values (null::bigint, 'approval_required', '{"usd": 500}'::jsonb)$$, 'a matching call needs an approval: nothing marked');
select is((select request from pgflight.approvals where step_id = :step_id and gate_key = 'tool:p1'),
  '{"tool": "pay", "tool_use_id": "p1", "arguments": {"usd": 500}}'::jsonb, 'the gate holds the arguments');
select is((select count(*) from pgflight.traces where agent_run_id = :agent_run_id and tool_use_id = 'p1' and block_type = 'tool_result'),
  0::bigint, 'no result row for a call awaiting approval');
select is((select tool_calls from pgflight.agent_runs where id = :agent_run_id), 2, 'only the two marked calls are counted');
select results_eq(format('select waiting from pgflight.request_approval(%s, %s, %L)', :attempt_id, :token, 'tool:p1'),
  $$values (true)$$, 'the step parks on the tool gate');
select results_eq($$select gate_key, request -> 'arguments' from pgflight.pending_approvals() where step_id = $$ || :step_id,
  $$values ('tool:p1', '{"usd": 500}'::jsonb)$$, 'the operator sees the arguments among the pending approvals');
select pgflight.approve(:step_id, 'approve', 'alice', 'halved', 'tool:p1', '{"arguments": {"usd": 250}}');
select attempt_id as a2, token as t2 from pgflight_test.take(:w2, 'agent') \gset
select results_eq(format('select previous_status, policy, arguments from pgflight.mark_tool_call(%s, %s, %s, %L)', :a2, :t2, :agent_run_id, 'p1'),
  $$values ('new', 'edited', '{"usd": 250}'::jsonb)$$, 'approved with an edit: marked in flight, to run with the edited arguments');
select results_eq(format($$select content ->> 'verdict', content -> 'requested_arguments', content -> 'arguments', content ->> 'decided_by' = session_user, content ->> 'note'
                            from pgflight.traces where agent_run_id = %s and tool_use_id = 'p1' and block_type = 'tool_approval'$$, :agent_run_id),
  $$values ('edited', '{"usd": 500}'::jsonb, '{"usd": 250}'::jsonb, true, 'halved [on behalf of alice]')$$,
  'the transcript records the original arguments, the edit and who made it');
select results_eq(format('select previous_status, policy, arguments from pgflight.mark_tool_call(%s, %s, %s, %L)', :a2, :t2, :agent_run_id, 'p1'),
  $$values ('in_flight', 'edited', '{"usd": 250}'::jsonb)$$, 'marked again: still the edited arguments');

select pgflight.approve(:step_id, 'reject', 'bob', 'too much', 'tool:p3');
select results_eq(format('select previous_status, policy, content ->> ''content'', content ->> ''is_error'' from pgflight.mark_tool_call(%s, %s, %s, %L)', :a2, :t2, :agent_run_id, 'p3'),
  $$values ('completed', 'rejected', 'The tool call was not run: the approver rejected it: too much [on behalf of bob].', 'true')$$,
  'a rejected call is stored as an error result with the reason');
select pgflight.approve(:step_id, 'approve', 'carol', null, 'tool:p4', '{"message": "paid by hand already"}');
select results_eq(format('select policy, content ->> ''content'', content ? ''is_error'' from pgflight.mark_tool_call(%s, %s, %s, %L)', :a2, :t2, :agent_run_id, 'p4'),
  $$values ('answered', 'paid by hand already', false)$$, 'a message answers the model instead of running the tool');

update pgflight.agent_runs set usd = 2 where id = :agent_run_id;
select pgflight.record_model_call(:a2, :t2, :agent_run_id, 2,
  '[{"type": "tool_use", "id": "n2", "name": "note", "input": {}}]', '{}', 'offline');
select results_eq(format('select policy from pgflight.mark_tool_call(%s, %s, %s, %L)', :a2, :t2, :agent_run_id, 'n2'),
  $$values ('approval_required')$$, 'past over_usd the ''*'' policy holds the call');
select pgflight.drop_tool_policy('test', '*');
select results_eq(format('select policy from pgflight.mark_tool_call(%s, %s, %s, %L)', :a2, :t2, :agent_run_id, 'n2'),
  $$values ('allow')$$, 'a dropped policy no longer applies');

select * from finish();
rollback;
