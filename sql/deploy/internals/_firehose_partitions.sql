-- Deploy pgflight:internals/_firehose_partitions

begin;

set local role pgflight_owner;

-- The traces partitions by agent run id (costs has the same bounds): [lo, hi) of each traces_from_<lo>.
CREATE OR REPLACE FUNCTION pgflight._firehose_partitions() RETURNS TABLE(lo bigint, hi bigint)
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select b.lo, b.hi from pgflight._id_partitions('traces') b
$$;

COMMENT ON FUNCTION pgflight._firehose_partitions() IS 'Internal: [lo, hi) of each traces/costs partition by agent run id (maintain_partitions).';

REVOKE ALL ON FUNCTION pgflight._firehose_partitions() FROM PUBLIC;

commit;
