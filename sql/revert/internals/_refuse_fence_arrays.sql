-- Revert pgflight:internals/_refuse_fence_arrays
begin;
set local role pgflight_owner;
drop function pgflight._refuse_fence_arrays(text, bigint[], bigint[]);
commit;
