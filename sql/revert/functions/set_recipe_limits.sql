-- Revert pgflight:functions/set_recipe_limits
begin;
set local role pgflight_owner;
drop function pgflight.set_recipe_limits(text, jsonb);
commit;
