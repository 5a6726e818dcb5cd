-- Revert pgflight:internals/_require_json_depth
begin;
set local role pgflight_owner;
drop function pgflight._require_json_depth(jsonb, text);
commit;
