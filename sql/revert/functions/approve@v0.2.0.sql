-- Revert pgflight:functions/approve@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.approve(bigint, text, text, text, text);
commit;
