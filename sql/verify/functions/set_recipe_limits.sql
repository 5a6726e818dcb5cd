-- Verify pgflight:functions/set_recipe_limits
select 'pgflight.set_recipe_limits(text, jsonb)'::regprocedure;
