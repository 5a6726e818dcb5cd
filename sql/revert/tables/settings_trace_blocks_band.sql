-- Revert pgflight:tables/settings_trace_blocks_band
begin;
set local role pgflight_owner;

alter table pgflight.settings drop constraint max_trace_blocks_per_iteration_fits_its_band;
comment on column pgflight.settings.max_trace_blocks_per_iteration is
  'Cap of trace blocks of one agent run iteration (record_trace, record_model_call).';

commit;
