-- Revert pgflight:internals/_reject_write
begin;
set local role pgflight_owner;
drop function pgflight._reject_write(bigint, bigint, text);
commit;
