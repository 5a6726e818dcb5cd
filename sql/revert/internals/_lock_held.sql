-- Revert pgflight:internals/_lock_held
begin;
set local role pgflight_owner;
drop function pgflight._lock_held(bigint, bigint, text, boolean);
commit;
