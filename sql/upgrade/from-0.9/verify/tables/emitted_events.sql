-- Verify pgflight:tables/emitted_events
select id, workspace_id, event_id, name, key, payload, emitted_at, expires_at, emitted_by
  from pgflight.emitted_events where false;
