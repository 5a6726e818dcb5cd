-- Verify pgflight:tables/waits
select id, step_id, wait_key, kind, workspace_id, event_name, event_key, due_at, default_payload,
       parked_attempt_id, requested_at, outcome, payload, event_id, resolved_at
  from pgflight.waits where false;
