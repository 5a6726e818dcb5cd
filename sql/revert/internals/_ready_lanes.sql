-- Revert pgflight:internals/_ready_lanes
begin;
set local role pgflight_owner;
drop function pgflight._ready_lanes(text[]);
commit;
