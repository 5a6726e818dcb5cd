-- Revert pgflight:internals/_claim_recipes
begin;
set local role pgflight_owner;
drop function pgflight._claim_recipes(text[], timestamp with time zone);
commit;
