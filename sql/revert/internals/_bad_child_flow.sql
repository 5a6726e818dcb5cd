-- Revert pgflight:internals/_bad_child_flow
begin;
set local role pgflight_owner;
drop function pgflight._bad_child_flow(jsonb);
commit;
