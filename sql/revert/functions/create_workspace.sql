-- Revert pgflight:functions/create_workspace
begin;
set local role pgflight_owner;
drop function pgflight.create_workspace(text, jsonb);
commit;
