-- Revert pgflight:internals/_json_too_deep
begin;
set local role pgflight_owner;
drop function pgflight._json_too_deep(jsonb, integer);
commit;
