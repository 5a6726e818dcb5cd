-- Deploy pgflight:internals/_json_depth

begin;

set local role pgflight_owner;

-- How deep p_value nests (0 for a scalar or NULL): doubling, then bisecting, the level
-- _json_too_deep asks about, so about 2 log2(depth) passes. For an error's DETAIL, not a hot path.
-- NULL when the value is too deep for PostgreSQL's stack to measure (54001).
CREATE OR REPLACE FUNCTION pgflight._json_depth(p_value jsonb) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_lo integer := 0;  -- the value nests deeper than this
  v_hi integer := 1;  -- and (once the first loop ends) not deeper than this
  v_mid integer;
begin
  if p_value is null or jsonb_typeof(p_value) not in ('object', 'array') then
    return 0;
  end if;
  begin
    while pgflight._json_too_deep(p_value, v_hi) loop
      v_lo := v_hi;
      v_hi := v_hi * 2;
    end loop;
    while v_hi - v_lo > 1 loop
      v_mid := (v_lo + v_hi) / 2;
      if pgflight._json_too_deep(p_value, v_mid) then
        v_lo := v_mid;
      else
        v_hi := v_mid;
      end if;
    end loop;
  exception when statement_too_complex then
    return null;
  end;
  return v_hi;
end
$$;

COMMENT ON FUNCTION pgflight._json_depth(p_value jsonb) IS 'Internal: how deep arrays and objects nest in a JSON value (a scalar or NULL is 0, [1] is 1).';

REVOKE ALL ON FUNCTION pgflight._json_depth(p_value jsonb) FROM PUBLIC;

commit;
