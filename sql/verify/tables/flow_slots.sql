-- Verify pgflight:tables/flow_slots
select scope, stripe, cap, held from pgflight.flow_slots where false;
select id, scope, n from pgflight.flow_slot_returns where false;
select slots from pgflight.step_attempts where false;
