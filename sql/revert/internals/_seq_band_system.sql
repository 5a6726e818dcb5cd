-- Revert pgflight:internals/_seq_band_system
begin;
set local role pgflight_owner;
drop function pgflight._seq_band_system();
commit;
