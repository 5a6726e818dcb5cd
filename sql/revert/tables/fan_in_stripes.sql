-- Revert pgflight:tables/fan_in_stripes
-- A parent parked on stripes gets back the exact count of its children still pending (its
-- counter counts a stripe's whole allotment until the stripe runs dry), so the unstriped counter
-- it returns to reaches zero with its last child.
begin;
set local role pgflight_owner;
update pgflight.steps p
   set children_pending = greatest(p.children_pending - f.taken, 0)
  from (select parent_id, sum(allotted - pending)::integer as taken
          from pgflight.fan_in_stripes where pending > 0 group by parent_id) f
 where p.id = f.parent_id;
drop table pgflight.fan_in_stripes;
commit;
