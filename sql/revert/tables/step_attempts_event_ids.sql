-- Revert pgflight:tables/step_attempts_event_ids
-- The derived transitions become events rows again before the columns go, so no history is lost.
begin;
set local role pgflight_owner;
insert into pgflight.events (id, at, run_id, step_id, attempt_id, from_status, to_status, worker_id, reason)
overriding system value
select v.id, v.at, a.run_id, a.step_id, a.id, v.from_status, v.to_status, a.worker_id, v.reason
  from pgflight.step_attempts a,
       lateral (values (a.claim_event_id, a.claimed_at, 'queued', 'running', 'claimed'),
                       (a.finish_event_id, a.finished_at, 'running', 'succeeded', 'succeeded'))
         as v(id, at, from_status, to_status, reason)
 where v.id is not null;
drop index pgflight.step_attempts_finish_event_idx;
drop index pgflight.step_attempts_claim_event_idx;
alter table pgflight.step_attempts drop column claim_event_id, drop column finish_event_id;
comment on table pgflight.events is
  'Append-only log of transitions. reason names the event: queued, claimed, started, succeeded, '
  'failed, retry_scheduled, lease_expired, deadline_exceeded, dead_lettered, released, cancel_requested, '
  'cancelled, children_spawned, parent_resumed, approval_requested, approval_decided, '
  'stale_result_rejected, retried, replayed, budget_exceeded.';
commit;
