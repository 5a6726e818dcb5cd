-- Revert pgflight:internals/_fan_in_poke
begin;
set local role pgflight_owner;
drop function pgflight._fan_in_poke(bigint[], text[]);
commit;
