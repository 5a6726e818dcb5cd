-- Revert pgflight:internals/_claim_quotas
begin;
set local role pgflight_owner;
drop function pgflight._claim_quotas(integer, integer[], integer, integer[]);
commit;
