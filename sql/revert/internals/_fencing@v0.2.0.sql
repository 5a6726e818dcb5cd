-- Revert pgflight:internals/_fencing@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight._record_stale(bigint, bigint, text);
drop function pgflight._lock_held(bigint, bigint, text, boolean);
drop function pgflight._reject_write(bigint, bigint, text);
commit;
