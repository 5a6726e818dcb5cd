-- Verify pgflight:indexes/inspector_reads
select 'pgflight.step_attempts_dead_letter_idx'::regclass, 'pgflight.costs_at_idx'::regclass;
