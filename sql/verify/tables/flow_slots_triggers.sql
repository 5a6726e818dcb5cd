-- Verify pgflight:tables/flow_slots_triggers
select 1 / count(*)::int from pg_catalog.pg_trigger
 where tgrelid = 'pgflight.step_attempts'::regclass and tgname = 'step_attempts_return_slots';
