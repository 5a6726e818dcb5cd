-- Deploy pgflight:internals/_id_partitions

begin;

set local role pgflight_owner;

-- Sweep: keep the day partitions of pgflight.events (tables/events_by_day) and the agent
-- run id partitions of pgflight.traces and pgflight.costs (tables/firehose_by_agent_run).
--   1. today and settings.partitions_ahead_days days ahead exist (UTC days of pgflight._now()); a
--      day is created as a table of its own, filled with the rows events_default holds for it,
--      then attached, so no insert ever waits on the creation of an empty day;
--   2. every day partition whose end is older than settings.events_keep_s is detached and dropped
--      (retention without a DELETE);
--   3. rows of events_default older than that are deleted, at most p_limit per call;
--   4. traces and costs: partitions [lo, lo + settings.agent_runs_per_partition) are created (both
--      tables at once, filled from their default partitions the same way) until one whole partition
--      lies ahead of the next agent run id; a partition whose ids have all been drawn and in which no
--      agent run is left (purge_finished purged every run they belonged to) is dropped, checked again
--      under an ACCESS EXCLUSIVE lock on both tables so a run that committed meanwhile keeps it;
--   5. rows of traces_default / costs_default whose agent run is gone are deleted, at most p_limit
--      per call and table;
--   4-5 again for streams and stream_chunks (tables/streams), by run ids (settings.runs_per_stream_partition):
--      a partition goes once every run in it is purged;
--   6. workers stopped (deregistered) more than settings.workers_keep_s ago are deleted, at most
--      p_limit per call, unless one still holds a lease.
-- Detaching and attaching lock the parent table briefly; each action waits at most 200 ms for its
-- lock (lock_timeout, local to the action) and is otherwise left for the next call, so the log's
-- writers are never stalled behind it for longer. Returns one row per action taken.
-- [lo, hi) of each partition <parent>_from_<lo> of pgflight.<parent> (a table range-partitioned by an id).
CREATE OR REPLACE FUNCTION pgflight._id_partitions(p_parent text) RETURNS TABLE(lo bigint, hi bigint)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
begin
  return query
  select m[1]::bigint, m[2]::bigint
    from pg_catalog.pg_inherits i
    join pg_catalog.pg_class c on c.oid = i.inhrelid
    cross join lateral pg_catalog.regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid),
                                               'FROM \(''?(-?[0-9]+)''?\) TO \(''?(-?[0-9]+)''?\)') m
   where i.inhparent = ('pgflight.' || p_parent)::pg_catalog.regclass and c.relname ~ ('^' || p_parent || '_from_[0-9]+$');
end
$_$;

COMMENT ON FUNCTION pgflight._id_partitions(p_parent text) IS 'Internal: [lo, hi) of each id-range partition <parent>_from_<lo> of pgflight.<parent> (maintain_partitions).';

REVOKE ALL ON FUNCTION pgflight._id_partitions(p_parent text) FROM PUBLIC;

commit;
