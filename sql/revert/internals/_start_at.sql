-- Revert pgflight:internals/_start_at
begin;
set local role pgflight_owner;
drop function pgflight._start_at(jsonb, timestamp with time zone);
commit;
