-- Revert pgflight:functions/pause_workspace
begin;
set local role pgflight_owner;
drop function pgflight.pause_workspace(text, text);
commit;
