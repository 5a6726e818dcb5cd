-- Verify pgflight:cron_extension
select 1;
