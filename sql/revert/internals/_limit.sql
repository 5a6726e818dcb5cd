-- Revert pgflight:internals/_limit
begin;
set local role pgflight_owner;
drop function pgflight._limit(text);
commit;
