-- Verify pgflight:functions/approvals
select 'pgflight.request_approval(bigint, bigint, text, jsonb, jsonb)'::regprocedure;
select 'pgflight._decide(bigint, text, text, text, text)'::regprocedure;
select 'pgflight.approve(bigint, text, text, text, text)'::regprocedure;
select 'pgflight.expire_approvals(integer)'::regprocedure;
