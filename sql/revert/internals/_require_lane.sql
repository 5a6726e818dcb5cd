-- Revert pgflight:internals/_require_lane
begin;
set local role pgflight_owner;
drop function pgflight._require_lane(text, bigint, text);
commit;
