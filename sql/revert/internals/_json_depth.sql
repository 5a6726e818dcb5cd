-- Revert pgflight:internals/_json_depth
begin;
set local role pgflight_owner;
drop function pgflight._json_depth(jsonb);
commit;
