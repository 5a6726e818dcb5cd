-- Revert pgflight:tables/flow_slots_triggers
begin;
set local role pgflight_owner;
drop trigger step_attempts_return_slots on pgflight.step_attempts;
commit;
