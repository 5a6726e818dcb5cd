-- Revert pgflight:internals/_lock_cascade
begin;
set local role pgflight_owner;
drop function pgflight._lock_cascade(bigint, boolean);
commit;
