-- Revert pgflight:internals/_set_paused
begin;
set local role pgflight_owner;
drop function pgflight._set_paused(text, text, boolean, text);
commit;
