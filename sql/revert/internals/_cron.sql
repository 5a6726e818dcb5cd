-- Revert pgflight:internals/_cron
begin;
set local role pgflight_owner;
drop function pgflight._cron_next(integer[], integer[], integer[], integer[], integer[], integer[], boolean, boolean, text, timestamptz);
drop function pgflight._cron_parse(text);
drop function pgflight._cron_field(text, integer, integer, text[], text);
commit;
