-- Revert pgflight:functions/approvals
begin;
drop function pgflight.expire_approvals(integer);
drop function pgflight.approve(bigint, text, text, text, text);
drop function pgflight._decide(bigint, text, text, text, text);
drop function pgflight.request_approval(bigint, bigint, text, jsonb, jsonb);
commit;
