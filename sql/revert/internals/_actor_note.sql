-- Revert pgflight:internals/_actor_note
begin;
set local role pgflight_owner;
drop function pgflight._actor_note(text, text);
commit;
