-- Revert pgflight:internals/_opt_clamped
begin;
set local role pgflight_owner;
drop function pgflight._opt_clamped(jsonb, text, double precision, numeric, numeric);
commit;
