-- Deploy pgflight:tables/tool_policies
-- requires: tables/workspaces
-- Tool policies the DBA owns (docs/waiting.md#tool-policies): per workspace and tool name, what
-- an agent's tool call may do, decided in SQL by mark_tool_call just before the tool starts:
-- allow, deny (the model gets a tool_result error instead), or require_approval (the step parks
-- on an approval gate 'tool:<tool_use_id>' whose request holds the arguments; the decider may hand
-- back edited arguments or a message for the model). tool_name '*' is the workspace's policy for
-- every tool that has none of its own. A policy applies only when its conditions hold: the JSON
-- path `condition` matches the call's arguments (jsonb_path_exists, silent: a path that errors on
-- these arguments does not match) and the agent has spent at least `over_usd`; otherwise the call
-- is allowed.
begin;
set local role pgflight_owner;

create table pgflight.tool_policies (
  workspace_id  bigint not null references pgflight.workspaces (id) on delete cascade,
  tool_name     text not null,
  action        text not null,
  condition     jsonpath,
  over_usd      numeric(16, 8),
  updated_at    timestamptz not null,
  updated_by    text not null,
  constraint tool_policies_pkey primary key (workspace_id, tool_name),
  constraint action_is_known check (action in ('allow', 'deny', 'require_approval')),
  constraint over_usd_is_not_negative check (over_usd is null or over_usd >= 0)
);
comment on table pgflight.tool_policies is
  'Per workspace and tool name (''*'': every tool without its own row): action allow | deny | '
  'require_approval, applied by mark_tool_call when condition (a JSON path on the arguments) matches '
  'and the agent run has spent at least over_usd (USD); else the call is allowed. Written by '
  'set_tool_policy / drop_tool_policy (operator lane), read by tool_policies().';

commit;
