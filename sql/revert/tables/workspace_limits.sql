-- Revert pgflight:tables/workspace_limits
begin;
set local role pgflight_owner;
drop table pgflight.workspace_limits;
commit;
