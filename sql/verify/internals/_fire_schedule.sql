-- Verify pgflight:internals/_fire_schedule
select 'pgflight._fire_schedule(bigint, text, text, text, jsonb, jsonb, timestamptz)'::regprocedure;
