-- Revert pgflight:internals/_require_lane_on_run
begin;
set local role pgflight_owner;
drop function pgflight._require_lane_on_run(text, bigint, text);
commit;
