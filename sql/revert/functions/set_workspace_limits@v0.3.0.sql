-- Revert pgflight:functions/set_workspace_limits@v0.3.0
begin;
set local role pgflight_owner;
drop function pgflight.set_workspace_limits(text, jsonb);
commit;
