-- Revert pgflight:views/run_list@v0.2.0
begin;
set local role pgflight_owner;
drop view pgflight.run_list;
commit;
