-- Verify pgflight:tables/effects
select id, step_id, effect_key, result, attempt_id, recorded_at from pgflight.effects where false;
