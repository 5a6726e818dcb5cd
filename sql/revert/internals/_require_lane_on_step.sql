-- Revert pgflight:internals/_require_lane_on_step
begin;
set local role pgflight_owner;
drop function pgflight._require_lane_on_step(text, bigint, text);
commit;
