-- Revert pgflight:functions/spawn_children
begin;
set local role pgflight_owner;
drop function pgflight.spawn_children(bigint, bigint, jsonb, jsonb);
commit;
