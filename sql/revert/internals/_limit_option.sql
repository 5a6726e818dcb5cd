-- Revert pgflight:internals/_limit_option
begin;
set local role pgflight_owner;
drop function pgflight._limit_option(jsonb, text, double precision, double precision, boolean);
commit;
