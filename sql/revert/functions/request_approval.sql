-- Revert pgflight:functions/request_approval
begin;
set local role pgflight_owner;
drop function pgflight.request_approval(bigint, bigint, text, jsonb, jsonb);
commit;
