-- Deploy pgflight:internals/_submit_runs_require_depth

begin;

set local role pgflight_owner;

-- The depth cap of a submit_runs call's inputs: one pass over the whole call (an input sits two
-- levels down, [{"input": ...}]); the element is looked for only to name it in the ZF005. A deep
-- element or options object that is not an input is left to the element checks (22023).
CREATE OR REPLACE FUNCTION pgflight._submit_runs_require_depth(p_runs jsonb, p_max_depth integer) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_idx integer;
begin
  if pgflight._json_too_deep(p_runs, p_max_depth + 2) then
    select e.ord into v_idx
      from jsonb_array_elements(p_runs) with ordinality as e(value, ord)
     where jsonb_typeof(e.value) = 'object'
       and pgflight._json_too_deep(e.value -> 'input', p_max_depth)
     order by e.ord limit 1;
    if v_idx is not null then
      perform pgflight._require_json_depth(p_runs -> (v_idx - 1) -> 'input', format('input of run %s', v_idx));
    end if;
  end if;
end
$$;

COMMENT ON FUNCTION pgflight._submit_runs_require_depth(p_runs jsonb, p_max_depth integer) IS 'Internal (submit_runs): ZF005 naming the first run whose input nests deeper than p_max_depth.';

REVOKE ALL ON FUNCTION pgflight._submit_runs_require_depth(p_runs jsonb, p_max_depth integer) FROM PUBLIC;

commit;
