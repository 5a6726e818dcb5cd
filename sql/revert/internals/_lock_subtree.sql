-- Revert pgflight:internals/_lock_subtree
begin;
set local role pgflight_owner;
drop function pgflight._lock_subtree(bigint, boolean);
commit;
