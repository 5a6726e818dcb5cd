-- Revert pgflight:internals/_opt_string
begin;
set local role pgflight_owner;
drop function pgflight._opt_string(jsonb, text, text, integer, integer, text);
commit;
