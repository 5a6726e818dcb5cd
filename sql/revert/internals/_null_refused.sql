-- Revert pgflight:internals/_null_refused
begin;
set local role pgflight_owner;
drop function pgflight._null_refused(text, text);
commit;
