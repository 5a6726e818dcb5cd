-- Verify pgflight:tables/settings_trace_blocks_band
select 1/count(*) from pg_catalog.pg_constraint
 where conname = 'max_trace_blocks_per_iteration_fits_its_band' and conrelid = 'pgflight.settings'::regclass;
