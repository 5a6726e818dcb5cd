-- Revert pgflight:internals/_opt_bool
begin;
set local role pgflight_owner;
drop function pgflight._opt_bool(jsonb, text, boolean, text);
commit;
