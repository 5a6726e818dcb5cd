-- Revert pgflight:internals/_read_limits
begin;
set local role pgflight_owner;
drop function pgflight._require_limit(text, integer, integer);
commit;
