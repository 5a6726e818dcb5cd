-- Revert pgflight:internals/_cancel_steps
begin;
set local role pgflight_owner;
drop function pgflight._cancel_steps(bigint[], text, text);
commit;
