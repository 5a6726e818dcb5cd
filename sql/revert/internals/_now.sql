-- Revert pgflight:internals/_now
begin;
set local role pgflight_owner;
drop function pgflight._now();
commit;
