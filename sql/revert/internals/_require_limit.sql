-- Revert pgflight:internals/_require_limit
begin;
set local role pgflight_owner;
drop function pgflight._require_limit(text, integer, integer);
commit;
