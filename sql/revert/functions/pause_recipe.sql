-- Revert pgflight:functions/pause_recipe
begin;
set local role pgflight_owner;
drop function pgflight.pause_recipe(text, text);
commit;
