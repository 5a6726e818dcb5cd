-- Revert pgflight:tables/step_attempts_triggers
begin;
set local role pgflight_owner;
drop trigger step_attempts_key_slot_freed on pgflight.step_attempts;
drop trigger step_attempts_fill_flow on pgflight.step_attempts;
commit;
