-- Revert pgflight:internals/_move_budget
begin;
set local role pgflight_owner;
drop function pgflight._move_budget(bigint[], numeric, numeric, numeric, boolean, timestamp with time zone, text);
commit;
