-- Deploy pgflight:internals/_limit

begin;

set local role pgflight_owner;

-- The engine's hard limits: the largest value any time option may take, so that nothing computed
-- from a stored option later (a lease, a deadline, a retry delay) can leave timestamptz's range.
-- Claims and sweeps clamp to these as well, for rows written before the options were checked.
CREATE OR REPLACE FUNCTION pgflight._limit(p_name text) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case p_name
    when 'lease_s' then 604800         -- 7 days
    when 'runtime_s' then 31536000     -- 365 days
    when 'delay_s' then 2592000        -- 30 days: a retry delay, a backoff cap
    when 'usd' then 1000000000         -- a billion USD
  end::double precision
$$;

COMMENT ON FUNCTION pgflight._limit(p_name text) IS 'Internal: the hard maximum of a kind of option (lease_s, runtime_s, delay_s, usd).';

REVOKE ALL ON FUNCTION pgflight._limit(p_name text) FROM PUBLIC;

commit;
