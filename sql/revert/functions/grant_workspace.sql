-- Revert pgflight:functions/grant_workspace
begin;
set local role pgflight_owner;
drop function pgflight.grant_workspace(name, text, text);
commit;
