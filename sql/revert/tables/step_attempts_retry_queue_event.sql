-- Revert pgflight:tables/step_attempts_retry_queue_event
-- The derived retry_scheduled rows become events rows again before the column goes, so no
-- history is lost, and their attempts' queue_event_id is cleared (it meant a submit's only).
begin;
set local role pgflight_owner;
insert into pgflight.events (id, at, run_id, step_id, attempt_id, from_status, to_status, reason, actor, detail)
select a.queue_event_id, a.created_at, a.run_id, a.step_id, a.id, null, 'queued', 'retry_scheduled', 'reclaim',
       jsonb_build_object('delay_s', round(a.queue_delay_s::numeric, 3), 'attempt_no', a.attempt_no)
  from pgflight.step_attempts a
 where a.queue_event_id is not null and a.queue_delay_s is not null;
update pgflight.step_attempts set queue_event_id = null where queue_delay_s is not null;
comment on column pgflight.step_attempts.queue_event_id is
  'Events id of the submit that queued this attempt (a run''s root step, attempt 1), shown by run_events '
  'with actor runs.submitted_by; null: the queued, if any, is an events row.';
alter table pgflight.step_attempts drop column queue_delay_s;
commit;
