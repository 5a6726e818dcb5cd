-- Revert pgflight:tables/flow_slots
begin;
set local role pgflight_owner;
alter table pgflight.step_attempts drop column slots;
drop table pgflight.flow_slot_returns;
drop table pgflight.flow_slots;
commit;
