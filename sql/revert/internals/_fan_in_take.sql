-- Revert pgflight:internals/_fan_in_take
begin;
set local role pgflight_owner;
drop function pgflight._fan_in_take(bigint, integer);
commit;
