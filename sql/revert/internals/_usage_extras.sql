-- Revert pgflight:internals/_usage_extras
begin;
set local role pgflight_owner;
drop function pgflight._usage_extras(jsonb);
commit;
