-- Deploy pgflight:tables/step_attempts_triggers
-- The triggers of step_attempts' flow columns (issue 15); their functions are internals/_flow_triggers.
--   step_attempts_fill_flow: an attempt inserted without workspace_id (the retry paths) gets its
--     run's workspace and its step's concurrency key; inserts that pass them never fire it.
--   step_attempts_key_slot_freed: a keyed attempt that stops holding or waiting for a slot wakes
--     one parked attempt of its key; unkeyed rows never fire it (WHEN clause).
begin;
set local role pgflight_owner;

create trigger step_attempts_fill_flow before insert on pgflight.step_attempts
  for each row when (new.workspace_id is null) execute function pgflight._fill_attempt_flow();
create trigger step_attempts_key_slot_freed after update of status on pgflight.step_attempts
  for each row
  when (old.concurrency_key is not null
        and old.status in ('queued', 'claimed', 'running', 'cancel_requested')
        and new.status not in ('queued', 'claimed', 'running', 'cancel_requested'))
  execute function pgflight._key_slot_freed();

commit;
