-- Revert pgflight:internals/_opt_interval
begin;
set local role pgflight_owner;
drop function pgflight._opt_interval(jsonb, text, double precision, numeric, numeric, text);
commit;
