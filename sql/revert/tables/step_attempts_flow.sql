-- Revert pgflight:tables/step_attempts_flow
begin;
set local role pgflight_owner;
drop index pgflight.step_attempts_queued_key_idx;
drop index pgflight.step_attempts_leased_key_idx;
drop index pgflight.step_attempts_leased_ws_idx;
drop index pgflight.step_attempts_recipe_ready_idx;
drop index pgflight.step_attempts_ws_ready_idx;
-- wake parked attempts so the old claim sees them
update pgflight.step_attempts set available_after = pgflight._now() where status = 'queued' and available_after = 'infinity';
create index step_attempts_ready_idx on pgflight.step_attempts (priority desc, available_after, id)
  where status = 'queued';
alter table pgflight.step_attempts drop column workspace_id, drop column concurrency_key, drop column concurrency_limit;
alter table pgflight.steps drop column concurrency_key, drop column concurrency_limit;
commit;
