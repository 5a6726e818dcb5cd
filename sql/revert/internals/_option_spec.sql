-- Revert pgflight:internals/_option_spec
begin;
set local role pgflight_owner;
drop function pgflight._option_spec();
commit;
