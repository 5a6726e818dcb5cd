-- Deploy pgflight:tables/settings_trace_blocks_band
-- requires: tables/settings_tenant_caps
-- settings.max_trace_blocks_per_iteration has an upper bound: 1000, the first seq of the
-- transcript's tool-results band (_seq_band_tool_results()). A model response's blocks are stored
-- at seq 0 .. n-1 and each tool_use's result at 1000 + its seq, so a response of more than 1000
-- blocks would write its later blocks into the tool results' band (and their results into the
-- system band at 2000): the cap keeps every response inside its band.
begin;
set local role pgflight_owner;

alter table pgflight.settings
  add constraint max_trace_blocks_per_iteration_fits_its_band check (max_trace_blocks_per_iteration <= 1000);

comment on column pgflight.settings.max_trace_blocks_per_iteration is
  'Cap of trace blocks of one agent run iteration (record_trace, record_model_call); 1 .. 1000, the seq band '
  'of a model response (0 .. 999; tool results from 1000).';

commit;
