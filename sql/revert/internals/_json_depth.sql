-- Revert pgflight:internals/_json_depth
begin;
set local role pgflight_owner;
drop function pgflight._require_json_depth(jsonb, text);
drop function pgflight._json_depth(jsonb);
drop function pgflight._json_too_deep(jsonb, integer);
commit;
