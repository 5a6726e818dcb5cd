-- Revert pgflight:tables/recipe_limits
begin;
set local role pgflight_owner;
drop table pgflight.recipe_limits;
commit;
