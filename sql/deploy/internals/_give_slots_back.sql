-- Deploy pgflight:internals/_give_slots_back

begin;

set local role pgflight_owner;

-- Give back slots taken and not used (by _take_slots_all) to the stripe each scope locked first
-- (this transaction holds its lock): one statement for every scope; nothing for zero.
CREATE OR REPLACE FUNCTION pgflight._give_slots_back(p_scopes bigint[], p_stripes smallint[], p_counts integer[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
begin
  -- PL/pgSQL: its plan is cached across calls (a SQL function with a SET clause is planned each time)
  update pgflight.flow_slots s set held = s.held - u.n
    from unnest(p_scopes, p_stripes, p_counts) u(scope, stripe, n)
   where s.scope = u.scope and s.stripe = u.stripe and u.n > 0;
end
$$;

COMMENT ON FUNCTION pgflight._give_slots_back(p_scopes bigint[], p_stripes smallint[], p_counts integer[]) IS 'Internal: give unused in-flight slots back to the stripes a claim locked (per scope: stripe, count).';

REVOKE ALL ON FUNCTION pgflight._give_slots_back(p_scopes bigint[], p_stripes smallint[], p_counts integer[]) FROM PUBLIC;

commit;
