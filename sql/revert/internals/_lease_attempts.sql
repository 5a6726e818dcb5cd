-- Revert pgflight:internals/_lease_attempts
begin;
set local role pgflight_owner;
drop function pgflight._lease_attempts(bigint, bigint[], double precision, boolean, timestamp with time zone, smallint);
commit;
