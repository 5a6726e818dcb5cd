-- Deploy pgflight:internals/_bucket_tokens

begin;

set local role pgflight_owner;

-- A token bucket's tokens now: refilled at p_rate per second since p_refilled_at, at most p_burst.
-- Starts full. Never raises: the constraints bound rate and burst.
CREATE OR REPLACE FUNCTION pgflight._bucket_tokens(p_tokens double precision, p_refilled_at timestamp with time zone, p_rate double precision, p_burst double precision, p_now timestamp with time zone) RETURNS double precision
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case when p_tokens is null or p_refilled_at is null then p_burst
              else least(p_burst, p_tokens + greatest(0, extract(epoch from p_now - p_refilled_at)::double precision) * p_rate)
         end
$$;

COMMENT ON FUNCTION pgflight._bucket_tokens(p_tokens double precision, p_refilled_at timestamp with time zone, p_rate double precision, p_burst double precision, p_now timestamp with time zone) IS 'Internal: a token bucket''s level at p_now.';

REVOKE ALL ON FUNCTION pgflight._bucket_tokens(p_tokens double precision, p_refilled_at timestamp with time zone, p_rate double precision, p_burst double precision, p_now timestamp with time zone) FROM PUBLIC;

commit;
