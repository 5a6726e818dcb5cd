-- Revert pgflight:internals/_claim_fair@v1.0.0
begin;
set local role pgflight_owner;
drop function pgflight._claim_fair(bigint, integer, double precision, text[], boolean, timestamp with time zone, bigint[]);
commit;
