-- Revert pgflight:internals/_cron_parse
begin;
set local role pgflight_owner;
drop function pgflight._cron_parse(text);
commit;
