-- Revert pgflight:views/schedule_list
begin;
set local role pgflight_owner;
drop view pgflight.schedule_list;
commit;
