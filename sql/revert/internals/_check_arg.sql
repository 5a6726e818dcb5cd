-- Revert pgflight:internals/_check_arg
begin;
set local role pgflight_owner;
drop function pgflight._check_arg(text, double precision, double precision, double precision);
commit;
