-- Verify pgflight:tables/settings_submit_cap
select max_runs_per_call from pgflight.settings where false;
