-- Revert pgflight:internals/_claim_set
begin;
set local role pgflight_owner;
drop function pgflight._claim_set(bigint, bigint[], text[], bigint[], integer[], smallint[], double precision, boolean, timestamp with time zone);
commit;
