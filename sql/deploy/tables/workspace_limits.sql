-- Deploy pgflight:tables/workspace_limits

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.workspace_limits (
    workspace_id bigint NOT NULL,
    max_in_flight integer,
    share integer DEFAULT 1 NOT NULL,
    starts_per_s double precision,
    burst double precision,
    tokens double precision,
    refilled_at timestamp with time zone,
    model_tokens_per_min bigint,
    paused_at timestamp with time zone,
    paused_by text,
    updated_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT burst_is_at_least_one CHECK (((burst IS NULL) OR ((burst >= (1)::double precision) AND (burst <= ('1000000'::numeric)::double precision)))),
    CONSTRAINT max_in_flight_is_not_negative CHECK (((max_in_flight IS NULL) OR (max_in_flight >= 0))),
    CONSTRAINT model_tokens_per_min_is_positive CHECK (((model_tokens_per_min IS NULL) OR (model_tokens_per_min > 0))),
    CONSTRAINT paused_has_actor CHECK (((paused_at IS NULL) = (paused_by IS NULL))),
    CONSTRAINT rate_has_burst CHECK (((starts_per_s IS NULL) = (burst IS NULL))),
    CONSTRAINT rate_is_positive CHECK (((starts_per_s IS NULL) OR ((starts_per_s > (0)::double precision) AND (starts_per_s <= ('1000000'::numeric)::double precision)))),
    CONSTRAINT share_is_positive CHECK (((share >= 1) AND (share <= 1000)))
);

COMMENT ON TABLE pgflight.workspace_limits IS 'Flow control of a workspace. max_in_flight: leased attempts at once (null: no cap); share: weight in the fair claim (default 1); starts_per_s and burst: claim rate (token bucket, tokens/refilled_at its state); model_tokens_per_min: model tokens (input + output) per rolling minute, checked before each model call; paused_at/paused_by: not claimed while set.';

ALTER TABLE ONLY pgflight.workspace_limits
    ADD CONSTRAINT workspace_limits_pkey PRIMARY KEY (workspace_id);

ALTER TABLE ONLY pgflight.workspace_limits
    ADD CONSTRAINT workspace_limits_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

commit;
