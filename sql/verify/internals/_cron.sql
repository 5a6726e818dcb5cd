-- Verify pgflight:internals/_cron
select 'pgflight._cron_field(text, integer, integer, text[], text)'::regprocedure;
select 'pgflight._cron_parse(text)'::regprocedure;
select 'pgflight._cron_next(integer[], integer[], integer[], integer[], integer[], integer[], boolean, boolean, text, timestamptz)'::regprocedure;
