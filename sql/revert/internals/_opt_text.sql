-- Revert pgflight:internals/_opt_text
begin;
set local role pgflight_owner;
drop function pgflight._opt_text(jsonb, text, text);
commit;
