-- Revert pgflight:internals/_wake
begin;
set local role pgflight_owner;
drop function pgflight._wake(bigint, text, text);
commit;
