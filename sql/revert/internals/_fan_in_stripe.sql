-- Revert pgflight:internals/_fan_in_stripe
begin;
set local role pgflight_owner;
drop function pgflight._fan_in_stripe(bigint, integer);
commit;
