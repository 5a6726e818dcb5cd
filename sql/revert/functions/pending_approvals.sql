-- Revert pgflight:functions/pending_approvals
begin;
drop function pgflight.pending_approvals(integer);
commit;
