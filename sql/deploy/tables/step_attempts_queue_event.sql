-- Deploy pgflight:tables/step_attempts_queue_event
-- Fewer writes per step (issue 18), after tables/step_attempts_event_ids: a submitted run's first
-- transition (null -> queued) is on its root step's first attempt already (created_at, status)
-- and the run (submitted_by), so instead of an events row it takes an id from the events' own
-- sequence onto the attempt. run_events shows it as the events row it was (at = created_at,
-- actor = runs.submitted_by, reason queued), in the same id order. A queued of any other kind
-- (a retry, a child, a wake, a replay) still writes an events row. About 280 WAL bytes less per
-- submitted run (the row and its two index entries; docs/benchmarks.md).
begin;
set local role pgflight_owner;

alter table pgflight.step_attempts add column queue_event_id bigint;
comment on column pgflight.step_attempts.queue_event_id is
  'Events id of the submit that queued this attempt (a run''s root step, attempt 1), shown by run_events '
  'with actor runs.submitted_by; null: the queued, if any, is an events row.';

commit;
