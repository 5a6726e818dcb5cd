-- Revert pgflight:internals/_privileged
begin;
set local role pgflight_owner;
drop function pgflight._row_triggers_on(text);
drop function pgflight._backend_started_at(integer);
commit;
