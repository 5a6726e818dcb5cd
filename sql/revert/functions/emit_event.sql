-- Revert pgflight:functions/emit_event
begin;
set local role pgflight_owner;
drop function pgflight.emit_event(text, text, text, jsonb, jsonb);
commit;
