-- Deploy pgflight:tables/step_attempts_retry_queue_event
-- Fewer writes per reclaimed lease (issue 18: reclaim drain), after tables/step_attempts_queue_event:
-- the reclaim's retry queues a new attempt whose 'queued' transition (reason retry_scheduled, detail
-- delay_s and attempt_no) is on that attempt already (created_at, attempt_no) but for the backoff,
-- which available_after does not keep (a parked attempt's is 'infinity', a wake sets it to now). So
-- the retry takes an id from the events' own sequence onto the new attempt's queue_event_id, as a
-- submit does, and the backoff into queue_delay_s; run_events shows it as the events row it was
-- (actor reclaim), in the same id order. queue_delay_s null: the queue_event_id, if any, is a
-- submit's. Every other retry (fail_step, a reclaim row by row) still writes an events row. About
-- 330 WAL bytes less per reclaimed lease (the events row and its two index entries).
begin;
set local role pgflight_owner;

alter table pgflight.step_attempts add column queue_delay_s double precision;
comment on column pgflight.step_attempts.queue_delay_s is
  'Backoff in seconds of the reclaim''s retry that queued this attempt (its queue_event_id, shown by '
  'run_events as retry_scheduled, actor reclaim, detail delay_s rounded to ms and attempt_no); null: '
  'the queue_event_id, if any, is a submit''s.';
comment on column pgflight.step_attempts.queue_event_id is
  'Events id of the transition that queued this attempt when it wrote no events row, shown by '
  'run_events: a submit (a run''s root step, attempt 1; actor runs.submitted_by) or, with '
  'queue_delay_s, a reclaim''s retry (reason retry_scheduled, actor reclaim); null: the queued, if any, '
  'is an events row.';

commit;
