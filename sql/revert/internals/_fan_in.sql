-- Revert pgflight:internals/_fan_in
begin;
set local role pgflight_owner;
drop function pgflight._fan_in_clear(bigint);
drop function pgflight._fan_in_poke(bigint[], text[]);
drop function pgflight._fan_in_take(bigint, integer);
drop function pgflight._fan_in_stripe(bigint, integer);
commit;
