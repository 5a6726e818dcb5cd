begin;
drop view pgflight.run_list, pgflight.engine_health, pgflight.run_events, pgflight.dead_letters, pgflight.attempts, pgflight.step_status;
commit;
