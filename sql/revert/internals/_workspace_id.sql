-- Revert pgflight:internals/_workspace_id
begin;
set local role pgflight_owner;
drop function pgflight._workspace_id(text);
commit;
