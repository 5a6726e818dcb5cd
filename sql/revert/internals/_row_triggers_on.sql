-- Revert pgflight:internals/_row_triggers_on
begin;
set local role pgflight_owner;
drop function pgflight._row_triggers_on(text);
commit;
