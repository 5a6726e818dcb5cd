-- Revert pgflight:schema
begin;
alter default privileges for role pgflight_owner grant execute on functions to public;
drop schema pgflight;
commit;
