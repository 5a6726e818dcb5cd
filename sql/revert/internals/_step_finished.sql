-- Revert pgflight:internals/_step_finished
begin;
set local role pgflight_owner;
drop function pgflight._step_finished(bigint, text, text);
commit;
