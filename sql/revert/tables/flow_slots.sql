-- Revert pgflight:tables/flow_slots
begin;
set local role pgflight_owner;
drop table pgflight.flow_slots;
commit;
