-- Revert pgflight:internals/_fan_in_clear
begin;
set local role pgflight_owner;
drop function pgflight._fan_in_clear(bigint);
commit;
