-- Verify pgflight:tables/settings_waits
select event_retention_s, max_event_payload_bytes from pgflight.settings where false;
