-- Revert pgflight:functions/approve
begin;
set local role pgflight_owner;
drop function pgflight.approve(bigint, text, text, text, text, jsonb);
commit;
