-- Revert pgflight:functions/create_workspace
begin;
drop function pgflight.create_workspace(text, jsonb);
commit;
