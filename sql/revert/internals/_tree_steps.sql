-- Revert pgflight:internals/_tree_steps
begin;
set local role pgflight_owner;
drop function pgflight._tree_steps(bigint, bigint);
commit;
