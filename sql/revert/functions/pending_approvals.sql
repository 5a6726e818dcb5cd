-- Revert pgflight:functions/pending_approvals
begin;
set local role pgflight_owner;
drop function pgflight.pending_approvals(integer);
commit;
