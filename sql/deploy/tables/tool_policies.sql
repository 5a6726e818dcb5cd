-- Deploy pgflight:tables/tool_policies

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.tool_policies (
    workspace_id bigint NOT NULL,
    tool_name text NOT NULL,
    action text NOT NULL,
    condition jsonpath,
    over_usd numeric(16,8),
    updated_at timestamp with time zone NOT NULL,
    updated_by text NOT NULL,
    CONSTRAINT action_is_known CHECK ((action = ANY (ARRAY['allow'::text, 'deny'::text, 'require_approval'::text]))),
    CONSTRAINT over_usd_is_not_negative CHECK (((over_usd IS NULL) OR (over_usd >= (0)::numeric)))
);

COMMENT ON TABLE pgflight.tool_policies IS 'Per workspace and tool name (''*'': every tool without its own row): action allow | deny | require_approval, applied by mark_tool_call when condition (a JSON path on the arguments) matches and the agent run has spent at least over_usd (USD); else the call is allowed. Written by set_tool_policy / drop_tool_policy (operator lane), read by tool_policies().';

ALTER TABLE ONLY pgflight.tool_policies
    ADD CONSTRAINT tool_policies_pkey PRIMARY KEY (workspace_id, tool_name);

ALTER TABLE ONLY pgflight.tool_policies
    ADD CONSTRAINT tool_policies_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

commit;
