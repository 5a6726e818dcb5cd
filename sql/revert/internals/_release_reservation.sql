-- Revert pgflight:internals/_release_reservation
begin;
set local role pgflight_owner;
drop function pgflight._release_reservation(bigint);
commit;
