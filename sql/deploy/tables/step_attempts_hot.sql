-- Deploy pgflight:tables/step_attempts_hot
-- A heartbeat is a HOT update (issue 18). A heartbeat changes lease_expires_at and nothing else
-- of the attempt; that column was the key of step_attempts_expiring_idx, so every heartbeat wrote
-- a new entry into every index of the table (12 of them) and left a dead tuple for vacuum. The
-- reclaim sweep reads expired leases through step_attempts_leased_ws_idx instead, which has the
-- same predicate (the leased statuses) and a key no heartbeat changes, and filters on the lease:
-- it reads the rows in flight (workers x batch), not the history. fillfactor 80 keeps room on
-- each page for the new version of a row, so the HOT update finds it on the page (a full page
-- forces a non-HOT update whatever the indexes are). Status transitions stay non-HOT: status is
-- in the predicate of the claim and live-attempt indexes, so a row must leave them when it moves.
begin;
set local role pgflight_owner;

drop index pgflight.step_attempts_expiring_idx;
alter table pgflight.step_attempts set (fillfactor = 80);

commit;
