-- Deploy pgflight:internals/_json_too_deep

begin;

set local role pgflight_owner;

-- Does p_value nest deeper than p_cap? True when an array or object sits at level p_cap (the
-- value itself is level 0): then the nesting is at least p_cap + 1. Strict mode, so that an array
-- at that level is tested as itself and not unwrapped into its elements.
-- Most values are not walked at all: a value nesting d levels takes at least 8 d bytes as jsonb (a
-- 4-byte header per container, a 4-byte entry in its parent, the 4-byte length word), so a value
-- stored in fewer than 8 (p_cap + 1) bytes, uncompressed, cannot be deeper than p_cap; both are
-- read from the datum's header. A compressed value (one read from a table) is always walked.
CREATE OR REPLACE FUNCTION pgflight._json_too_deep(p_value jsonb, p_cap integer) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
begin
  if p_value is null
     or (pg_column_size(p_value) < 8 * (p_cap + 1) and pg_column_compression(p_value) is null)
     or jsonb_typeof(p_value) not in ('object', 'array') then
    return false;
  end if;
  return jsonb_path_exists(
    p_value, format('strict $.**{%s} ? (@.type() == "array" || @.type() == "object")', p_cap)::jsonpath);
end
$_$;

COMMENT ON FUNCTION pgflight._json_too_deep(p_value jsonb, p_cap integer) IS 'Internal: does the JSON value nest arrays and objects deeper than p_cap levels (one pass)?';

REVOKE ALL ON FUNCTION pgflight._json_too_deep(p_value jsonb, p_cap integer) FROM PUBLIC;

commit;
