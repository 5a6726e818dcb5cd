-- Revert pgflight:internals/_opt_num
begin;
set local role pgflight_owner;
drop function pgflight._opt_num(jsonb, text, double precision);
commit;
