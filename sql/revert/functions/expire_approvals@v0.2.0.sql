-- Revert pgflight:functions/expire_approvals@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.expire_approvals(integer);
commit;
