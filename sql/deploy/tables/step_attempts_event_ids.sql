-- Deploy pgflight:tables/step_attempts_event_ids
-- Fewer writes per step (issue 18): the happy path's transitions are on the attempt row already
-- (claimed_at, finished_at, status, worker_id), so instead of an events row each, a started claim
-- (queued -> running, claim_batch's start option) and a success from running (running ->
-- succeeded) take an id from the events' own sequence onto the attempt. run_events shows them as
-- events rows with that id, so the log keeps one order (ids) and every reader its meaning. Every
-- other transition (a claim without start, start_step, a success straight from claimed, failures,
-- reclaims, cancels, wakes …) still writes an events row. The two partial indexes let
-- metrics_snapshot count a window of event ids without reading history.
begin;
set local role pgflight_owner;

alter table pgflight.step_attempts
  add column claim_event_id  bigint,
  add column finish_event_id bigint;
comment on column pgflight.step_attempts.claim_event_id is
  'Events id of this attempt''s started claim (queued -> running), shown by run_events; null: the claim, '
  'if any, is an events row.';
comment on column pgflight.step_attempts.finish_event_id is
  'Events id of this attempt''s success from running (running -> succeeded), shown by run_events; null: '
  'the end, if any, is an events row.';
create index step_attempts_claim_event_idx on pgflight.step_attempts (claim_event_id)
  where claim_event_id is not null;
create index step_attempts_finish_event_idx on pgflight.step_attempts (finish_event_id)
  where finish_event_id is not null;
comment on table pgflight.events is
  'Append-only log of transitions; read it through the run_events view, which adds the started claims '
  'and the successes from running that the attempts record (step_attempts.claim_event_id, finish_event_id). '
  'reason names the event: queued, claimed, started, succeeded, failed, retry_scheduled, lease_expired, '
  'deadline_exceeded, dead_lettered, released, cancel_requested, cancelled, children_spawned, '
  'parent_resumed, approval_requested, approval_decided, stale_result_rejected, retried, replayed, '
  'budget_exceeded.';

commit;
