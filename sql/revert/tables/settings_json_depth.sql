-- Revert pgflight:tables/settings_json_depth
begin;
set local role pgflight_owner;

alter table pgflight.settings drop constraint max_json_depth_is_positive, drop column max_json_depth;

commit;
