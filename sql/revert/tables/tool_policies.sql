-- Revert pgflight:tables/tool_policies
begin;
set local role pgflight_owner;
drop table pgflight.tool_policies;
commit;
