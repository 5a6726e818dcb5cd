-- Deploy pgflight:internals/_claim_quotas

begin;

set local role pgflight_owner;

-- The quotas of a fair claim (_claim_fair's section 4): p_batch split among the served workspaces
-- in proportion to their shares (p_shares, same order), rounded down, the remainder one each in
-- turn order from the (0-based) workspace p_first; so a workspace with ready work gets at least
-- one while the batch has room for it. p_fair (null: none) caps each workspace at the global
-- slots its fair share leaves it (_claim_global_shares). A computation: reads nothing.
CREATE OR REPLACE FUNCTION pgflight._claim_quotas(p_batch integer, p_shares integer[], p_first integer, p_fair integer[]) RETURNS integer[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_n integer := cardinality(p_shares);
  v_quota integer[] := array_fill(0, array[v_n]);
  v_total integer := 0;
  v_left integer := p_batch;
  v_w integer;
begin
  for v_i in 1 .. v_n loop
    v_total := v_total + p_shares[v_i];
  end loop;
  for v_i in 0 .. v_n - 1 loop
    v_w := (p_first + v_i) % v_n + 1;
    v_quota[v_w] := (p_batch * p_shares[v_w]) / v_total;
    v_left := v_left - v_quota[v_w];
  end loop;
  for v_i in 0 .. v_n - 1 loop
    exit when v_left <= 0;
    v_w := (p_first + v_i) % v_n + 1;
    v_quota[v_w] := v_quota[v_w] + 1;
    v_left := v_left - 1;
  end loop;
  if p_fair is not null then
    for v_i in 1 .. v_n loop
      v_quota[v_i] := least(v_quota[v_i], p_fair[v_i]);
    end loop;
  end if;
  return v_quota;
end
$$;

COMMENT ON FUNCTION pgflight._claim_quotas(p_batch integer, p_shares integer[], p_first integer, p_fair integer[]) IS 'Internal (_claim_fair): each served workspace''s quota of a batch, by share, the remainder one each in turn order from p_first, capped by p_fair (null: no cap).';

REVOKE ALL ON FUNCTION pgflight._claim_quotas(p_batch integer, p_shares integer[], p_first integer, p_fair integer[]) FROM PUBLIC;

commit;
