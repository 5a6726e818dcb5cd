-- Revert pgflight:indexes/inspector_reads
begin;
drop index pgflight.costs_at_idx;
drop index pgflight.step_attempts_dead_letter_idx;
commit;
