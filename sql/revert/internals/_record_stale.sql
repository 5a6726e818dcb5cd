-- Revert pgflight:internals/_record_stale
begin;
set local role pgflight_owner;
drop function pgflight._record_stale(bigint, bigint, text);
commit;
