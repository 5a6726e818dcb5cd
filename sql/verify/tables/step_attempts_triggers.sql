-- Verify pgflight:tables/step_attempts_triggers
select 1 / count(*)::int from pg_catalog.pg_trigger
 where tgrelid = 'pgflight.step_attempts'::regclass and tgname = 'step_attempts_fill_flow';
select 1 / count(*)::int from pg_catalog.pg_trigger
 where tgrelid = 'pgflight.step_attempts'::regclass and tgname = 'step_attempts_key_slot_freed';
