-- set_tool_policy upserts a workspace's policy for a tool and refuses what it cannot apply: an
-- unknown key, a bad action, a path that does not parse, a negative over_usd, NULLs (22023), an
-- unknown workspace (ZF003), a tool name over max_name_bytes (ZF005); tool_policies lists them and
-- drop_tool_policy says whether it removed one.
begin;
\ir ../_helpers.psql
select plan(12);

select results_eq($$select tool_name, action, condition, over_usd from pgflight.set_tool_policy('test', 'pay', '{"action": "deny"}')$$,
  $$values ('pay', 'deny', null::text, null::numeric)$$, 'a policy is set');
select results_eq($$select action, condition, over_usd from pgflight.set_tool_policy('test', 'pay', '{"action": "require_approval", "when": "$.usd ? (@ > 10)", "over_usd": 0.5}')$$,
  $$values ('require_approval', '$."usd"?(@ > 10)', 0.5::numeric)$$, 'setting it again replaces it');
select results_eq($$select tool_name, action from pgflight.tool_policies('test')$$, $$values ('pay', 'require_approval')$$, 'tool_policies lists it');
select throws_ok($$select pgflight.set_tool_policy('test', 'pay', '{"action": "deny", "why": 1}')$$, '22023', null, 'an unknown key is 22023');
select throws_ok($$select pgflight.set_tool_policy('test', 'pay', '{"action": "maybe"}')$$, '22023', null, 'an unknown action is 22023');
select throws_ok($$select pgflight.set_tool_policy('test', 'pay', '{"action": "deny", "when": "$.(("}')$$, '22023', null, 'a path that does not parse is 22023');
select throws_ok($$select pgflight.set_tool_policy('test', 'pay', '{"action": "deny", "over_usd": -1}')$$, '22023', null, 'a negative over_usd is 22023');
select throws_ok($$select pgflight.set_tool_policy('test', null, '{"action": "deny"}')$$, '22023', null, 'a NULL tool is 22023');
select throws_ok($$select pgflight.set_tool_policy('nope', 'pay', '{"action": "deny"}')$$, 'ZF003', null, 'an unknown workspace is ZF003');
select throws_ok(format($$select pgflight.set_tool_policy('test', %L, '{"action": "deny"}')$$, repeat('t', 300)), 'ZF005', null, 'a tool name over max_name_bytes is ZF005');
select is(pgflight.drop_tool_policy('test', 'pay'), true, 'drop removes it');
select is(pgflight.drop_tool_policy('test', 'pay'), false, 'a second drop removes nothing');

select * from finish();
rollback;
