-- Revert pgflight:tables/step_attempts_queue_event
-- The derived queued rows become events rows again before the column goes, so no history is lost.
begin;
set local role pgflight_owner;
insert into pgflight.events (id, at, run_id, step_id, attempt_id, from_status, to_status, reason, actor)
overriding system value
select a.queue_event_id, a.created_at, a.run_id, a.step_id, a.id, null, 'queued', 'queued', r.submitted_by
  from pgflight.step_attempts a join pgflight.runs r on r.id = a.run_id
 where a.queue_event_id is not null;
alter table pgflight.step_attempts drop column queue_event_id;
commit;
