-- Revert pgflight:internals/_opt_number
begin;
set local role pgflight_owner;
drop function pgflight._opt_number(jsonb, text, double precision, numeric, numeric, text);
commit;
