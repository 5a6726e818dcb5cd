-- Verify pgflight:tables/step_attempts_event_ids
select claim_event_id, finish_event_id from pgflight.step_attempts where false;
