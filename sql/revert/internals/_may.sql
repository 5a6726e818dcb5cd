-- Revert pgflight:internals/_may
begin;
set local role pgflight_owner;
drop function pgflight._may(text, bigint);
commit;
