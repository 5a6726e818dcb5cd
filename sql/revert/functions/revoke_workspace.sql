-- Revert pgflight:functions/revoke_workspace
begin;
set local role pgflight_owner;
drop function pgflight.revoke_workspace(name, text, text);
commit;
