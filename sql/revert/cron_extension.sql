-- Revert pgflight:cron_extension
-- The extension may serve other users of this database: only pgflight's own jobs are removed
-- (by the revert of the schedules change). The extension itself stays.
begin;
select 1;
commit;
