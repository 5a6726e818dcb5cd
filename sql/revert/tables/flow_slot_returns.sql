-- Revert pgflight:tables/flow_slot_returns
begin;
set local role pgflight_owner;
drop table pgflight.flow_slot_returns;
commit;
