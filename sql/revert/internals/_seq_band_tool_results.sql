-- Revert pgflight:internals/_seq_band_tool_results
begin;
set local role pgflight_owner;
drop function pgflight._seq_band_tool_results();
commit;
