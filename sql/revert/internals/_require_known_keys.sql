-- Revert pgflight:internals/_require_known_keys
begin;
set local role pgflight_owner;
drop function pgflight._require_known_keys(jsonb, text[]);
commit;
