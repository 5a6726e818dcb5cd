-- Revert pgflight:internals/_steps_finished
begin;
set local role pgflight_owner;
drop function pgflight._steps_finished(bigint[], text[], text, timestamp with time zone);
commit;
