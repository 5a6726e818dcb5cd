-- Revert pgflight:tables/workspace_grants
begin;
set local role pgflight_owner;
drop table pgflight.workspace_grants;
commit;
