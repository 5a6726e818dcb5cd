-- Revert pgflight:internals/_unknown_workspace
begin;
set local role pgflight_owner;
drop function pgflight._unknown_workspace(text);
commit;
