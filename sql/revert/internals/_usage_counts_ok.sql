-- Revert pgflight:internals/_usage_counts_ok
begin;
set local role pgflight_owner;
drop function pgflight._usage_counts_ok(jsonb);
commit;
