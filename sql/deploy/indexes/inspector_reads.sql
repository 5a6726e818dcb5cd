-- Deploy pgflight:indexes/inspector_reads
-- Two partial/narrow indexes for the inspector and the metrics read, so neither scans history:
--   step_attempts_dead_letter_idx: dead letters newest first (dead_letter_page, metrics). Partial:
--     only dead-lettered attempts are in it; status is already in other partial indexes' predicates,
--     so it changes no update from HOT to non-HOT.
--   costs_at_idx: one UTC day's spend (cost_by_day, metrics_snapshot) without reading older rows.
--     One more btree insert per model call, next to a call that takes seconds.
begin;
set local role pgflight_owner;

create index step_attempts_dead_letter_idx on pgflight.step_attempts (id)
  where status = 'dead_letter';
create index costs_at_idx on pgflight.costs (at);

commit;
