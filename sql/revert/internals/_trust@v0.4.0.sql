-- Revert pgflight:internals/_trust@v0.4.0
begin;
set local role pgflight_owner;
drop function pgflight._require_own_attempt(bigint, bigint, text);
drop function pgflight._require_cap(text, double precision, double precision, text);
drop function pgflight._actor_note(text, text);
drop function pgflight._require_lane_on_step(text, bigint, text);
drop function pgflight._require_lane_on_run(text, bigint, text);
drop function pgflight._require_lane(text, bigint, text);
drop function pgflight._lane_workspaces(text);
drop function pgflight._may(text, bigint);
commit;
