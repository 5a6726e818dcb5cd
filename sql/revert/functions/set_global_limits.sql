-- Revert pgflight:functions/set_global_limits
begin;
set local role pgflight_owner;
drop function pgflight.set_global_limits(jsonb);
commit;
