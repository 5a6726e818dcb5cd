-- Revert pgflight:internals/_bad_child_options
begin;
set local role pgflight_owner;
drop function pgflight._bad_child_options(jsonb);
commit;
