-- Revert pgflight:tables/flow_limits
begin;
set local role pgflight_owner;
drop sequence pgflight.claim_turns;
alter table pgflight.settings drop column max_in_flight;
drop table pgflight.recipe_limits;
drop table pgflight.workspace_limits;
commit;
