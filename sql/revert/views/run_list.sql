-- Revert pgflight:views/run_list
begin;
set local role pgflight_owner;
drop view pgflight.run_list;
commit;
