-- Revert pgflight:functions/reserve_budget
begin;
set local role pgflight_owner;
drop function pgflight.reserve_budget(bigint, bigint, bigint, integer, numeric);
commit;
