-- Revert pgflight:functions/find_effect
begin;
set local role pgflight_owner;
drop function pgflight.find_effect(bigint, text);
commit;
