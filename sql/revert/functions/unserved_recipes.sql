-- Revert pgflight:functions/unserved_recipes
begin;
set local role pgflight_owner;
drop function pgflight.unserved_recipes(text[]);
commit;
