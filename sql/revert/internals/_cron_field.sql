-- Revert pgflight:internals/_cron_field
begin;
set local role pgflight_owner;
drop function pgflight._cron_field(text, integer, integer, text[], text);
commit;
