-- Deploy pgflight:tables/recipe_limits

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.recipe_limits (
    recipe text NOT NULL,
    starts_per_s double precision,
    burst double precision,
    tokens double precision,
    refilled_at timestamp with time zone,
    paused_at timestamp with time zone,
    paused_by text,
    updated_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT burst_is_at_least_one CHECK (((burst IS NULL) OR ((burst >= (1)::double precision) AND (burst <= ('1000000'::numeric)::double precision)))),
    CONSTRAINT paused_has_actor CHECK (((paused_at IS NULL) = (paused_by IS NULL))),
    CONSTRAINT rate_has_burst CHECK (((starts_per_s IS NULL) = (burst IS NULL))),
    CONSTRAINT rate_is_positive CHECK (((starts_per_s IS NULL) OR ((starts_per_s > (0)::double precision) AND (starts_per_s <= ('1000000'::numeric)::double precision)))),
    CONSTRAINT recipe_is_not_blank CHECK (((btrim(recipe) <> ''::text) AND (length(recipe) <= 200)))
);

COMMENT ON TABLE pgflight.recipe_limits IS 'Flow control of a recipe across all workspaces: starts_per_s and burst (token bucket), paused_at/paused_by.';

ALTER TABLE ONLY pgflight.recipe_limits
    ADD CONSTRAINT recipe_limits_pkey PRIMARY KEY (recipe);

commit;
