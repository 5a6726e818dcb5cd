-- Revert pgflight:functions/set_workspace_limits
begin;
set local role pgflight_owner;
drop function pgflight.set_workspace_limits(text, jsonb);
commit;
