-- Revert pgflight:internals/_queued_recipes
begin;
set local role pgflight_owner;
drop function pgflight._queued_recipes();
commit;
