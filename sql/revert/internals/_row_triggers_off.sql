-- Revert pgflight:internals/_row_triggers_off
begin;
set local role pgflight_owner;
drop function pgflight._row_triggers_off();
commit;
