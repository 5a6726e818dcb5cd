-- Verify pgflight:functions/pending_approvals
select 'pgflight.pending_approvals(integer)'::regprocedure;
