-- Deploy pgflight:internals/_fan_in_stripe

begin;

set local role pgflight_owner;

-- Spread p_created new children of p_parent over stripes (spawn_children, holding the parent's
-- row): 16 stripes of at least 64 children each, fewer for a smaller fan-out, none under 128
-- children (its count stays on the parent's row, as before). The parent's children_pending grows
-- by p_created either way (the caller's update). Returns how many stripes were laid.
CREATE OR REPLACE FUNCTION pgflight._fan_in_stripe(p_parent bigint, p_created integer) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_stripes integer := least(16, p_created / 64);
begin
  if v_stripes < 2
     or exists (select from pgflight.fan_in_stripes f where f.parent_id = p_parent and f.pending > 0) then
    return 0;
  end if;
  delete from pgflight.fan_in_stripes f where f.parent_id = p_parent;  -- dry ones of an earlier fan-out
  insert into pgflight.fan_in_stripes (parent_id, stripe, pending, allotted)
  select p_parent, g.s, n.share, n.share
    from generate_series(0, v_stripes - 1) as g(s)
   cross join lateral (select (p_created / v_stripes + case when g.s < p_created % v_stripes then 1 else 0 end)::integer
                         as share) n;
  return v_stripes;
end
$$;

COMMENT ON FUNCTION pgflight._fan_in_stripe(p_parent bigint, p_created integer) IS 'Internal: lay the counter stripes of a fan-out of p_created children; returns how many (0: unstriped).';

REVOKE ALL ON FUNCTION pgflight._fan_in_stripe(p_parent bigint, p_created integer) FROM PUBLIC;

commit;
