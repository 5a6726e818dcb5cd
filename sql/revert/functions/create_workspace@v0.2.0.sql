-- Revert pgflight:functions/create_workspace@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.create_workspace(text, jsonb);
commit;
