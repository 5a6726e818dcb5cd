-- Deploy pgflight:tables/runs_fillfactor_80
-- requires: tables/runs_hot
-- Issue 18 (WAL per step): fillfactor 90 (tables/runs_hot) left room for about four wider
-- finished rows on a page of about 39 bulk-inserted runs; completions that come faster than pruning
-- frees the old versions still moved a run to another page, a non-HOT update with an entry in
-- runs_pkey and runs_created_idx and a row lock: 0.89 of the completion updates were HOT in
-- bench/wal_profile.py (20,000 no-op steps completed in batches of 8), 1.00 at fillfactor 80,
-- which leaves room for about eight (51 WAL bytes per step less, full-page images included). The
-- price: a page holds about 35 runs instead of 39. Pages written before the change keep their fill
-- until they are rewritten.
begin;
set local role pgflight_owner;

alter table pgflight.runs set (fillfactor = 80);

commit;
