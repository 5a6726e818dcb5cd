-- Revert pgflight:internals/_reopen_step
begin;
set local role pgflight_owner;
drop function pgflight._reopen_step(bigint, text, text, text);
commit;
