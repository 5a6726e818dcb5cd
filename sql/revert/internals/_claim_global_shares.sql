-- Revert pgflight:internals/_claim_global_shares
begin;
set local role pgflight_owner;
drop function pgflight._claim_global_shares(integer, text[], bigint[], bigint[], integer);
commit;
