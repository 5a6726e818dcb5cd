-- Verify pgflight:tables/flow_limits
select workspace_id, max_in_flight, share, starts_per_s, burst, model_tokens_per_min, paused_at from pgflight.workspace_limits where false;
select recipe, starts_per_s, burst, paused_at from pgflight.recipe_limits where false;
select max_in_flight from pgflight.settings where false;
