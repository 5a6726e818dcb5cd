-- Verify pgflight:tables/event_channels
select workspace_id, name, key, touched_at from pgflight.event_channels where false;
