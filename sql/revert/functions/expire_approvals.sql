-- Revert pgflight:functions/expire_approvals
begin;
set local role pgflight_owner;
drop function pgflight.expire_approvals(integer);
commit;
