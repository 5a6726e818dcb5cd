-- Revert pgflight:tables/workspaces
begin;
set local role pgflight_owner;
drop table pgflight.workspaces;
commit;
