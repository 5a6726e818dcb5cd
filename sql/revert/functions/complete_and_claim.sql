-- Revert pgflight:functions/complete_and_claim
begin;
set local role pgflight_owner;
drop function pgflight.complete_and_claim(bigint, bigint[], bigint[], jsonb[], integer, double precision, text[], jsonb);
commit;
