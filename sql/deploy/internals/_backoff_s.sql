-- Deploy pgflight:internals/_backoff_s

begin;

set local role pgflight_owner;

-- Seconds to wait before retry number p_failed (1-based): min(max_s, base_s * factor^(n-1)),
-- times 1 +/- jitter. Saturates at max_s for ANY attempt number (2^1024 used to
-- overflow before the cap): the comparison with the cap is made in log space, and the power is
-- computed only when it is below the cap. Never raises: the stored backoff is read clamped (a
-- string or an out-of-range number written before the options were checked falls back to the
-- default or the bound), and the result is within [0, _limit('delay_s')].
CREATE OR REPLACE FUNCTION pgflight._backoff_s(p_failed integer, p_backoff jsonb) RETURNS double precision
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_base double precision := pgflight._opt_clamped(p_backoff, 'base_s', 1, 0, 86400);
  v_factor double precision := pgflight._opt_clamped(p_backoff, 'factor', 2, 1, 100);
  v_max double precision := pgflight._opt_clamped(p_backoff, 'max_s', 300, 0, 2592000);
  v_jitter double precision := pgflight._opt_clamped(p_backoff, 'jitter', 0.2, 0, 1);
  v_n double precision := greatest(coalesce(p_failed, 1) - 1, 0);
  v_delay double precision;
begin
  if v_base <= 0 or v_max <= 0 then
    v_delay := 0;
  elsif ln(v_base) + v_n * ln(v_factor) >= ln(v_max) then
    v_delay := v_max;
  else
    v_delay := v_base * power(v_factor, v_n);
  end if;
  return least(greatest(v_delay * (1 + v_jitter * (2 * random() - 1)), 0), pgflight._limit('delay_s'));
end
$$;

COMMENT ON FUNCTION pgflight._backoff_s(p_failed integer, p_backoff jsonb) IS 'Internal: retry delay in seconds, min(max_s, base_s * factor^(n-1)) times 1 +/- jitter; saturates, never raises.';

REVOKE ALL ON FUNCTION pgflight._backoff_s(p_failed integer, p_backoff jsonb) FROM PUBLIC;

commit;
