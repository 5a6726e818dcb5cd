-- Deploy pgflight:tables/runs_hot
-- requires: tables/runs
-- Issue 18 (WAL and server CPU per step): a run is written twice, at submit and when its root step
-- ends (status, finished_at). Runs are inserted in bulk, so their pages were full, and a third of
-- the completion updates (bench/burndown_profile.py: 0.67 HOT) moved the row to another page and
-- wrote an entry into each of the table's indexes. fillfactor 90 leaves room on each page for the
-- wider finished row (finished_at set): the update stays on its page, with no index entry. Pages
-- written before the change keep their fill until they are rewritten.
begin;
set local role pgflight_owner;

alter table pgflight.runs set (fillfactor = 90);

commit;
