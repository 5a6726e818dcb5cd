-- Revert pgflight:functions/find_effect@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.find_effect(bigint, text);
commit;
