-- Deploy pgflight:internals/_fan_in_take

begin;

set local role pgflight_owner;

-- Take p_n ended children from p_parent's stripes. dry: the allotments of the stripes this call
-- ran dry (to take from the parent's row); rest: what no stripe had left (counted on the parent's
-- row: an unstriped parent, a retried child). Lock order at the head of this file.
CREATE OR REPLACE FUNCTION pgflight._fan_in_take(p_parent bigint, p_n integer, OUT dry integer, OUT rest integer) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_home integer := pg_backend_pid() % 16;
  v_row record;
  v_take integer;
begin
  dry := 0;
  rest := p_n;
  -- one free stripe with enough left, never waiting
  select f.stripe, f.pending, f.allotted into v_row
    from pgflight.fan_in_stripes f
   where f.parent_id = p_parent and f.pending >= p_n
   order by f.stripe < v_home, f.stripe
   limit 1
     for update skip locked;
  if found then
    update pgflight.fan_in_stripes f set pending = f.pending - p_n
     where f.parent_id = p_parent and f.stripe = v_row.stripe;
    dry := case when v_row.pending = p_n then v_row.allotted else 0 end;
    rest := 0;
    return;
  end if;
  -- the end of a fan-in: wait for each stripe with some left, in stripe order, until taken
  for v_row in
    select f.stripe, f.pending, f.allotted
      from pgflight.fan_in_stripes f
     where f.parent_id = p_parent and f.pending > 0
     order by f.stripe
       for update
  loop
    v_take := least(v_row.pending, rest);
    update pgflight.fan_in_stripes f set pending = f.pending - v_take
     where f.parent_id = p_parent and f.stripe = v_row.stripe;
    if v_take = v_row.pending then
      dry := dry + v_row.allotted;
    end if;
    rest := rest - v_take;
    exit when rest = 0;
  end loop;
end
$$;

COMMENT ON FUNCTION pgflight._fan_in_take(p_parent bigint, p_n integer, OUT dry integer, OUT rest integer) IS 'Internal: take ended children from a parent''s counter stripes; dry = allotments of the stripes run dry, rest = what no stripe held.';

REVOKE ALL ON FUNCTION pgflight._fan_in_take(p_parent bigint, p_n integer, OUT dry integer, OUT rest integer) FROM PUBLIC;

commit;
