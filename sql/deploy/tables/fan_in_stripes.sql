-- Deploy pgflight:tables/fan_in_stripes
-- requires: tables/steps
-- The striped fan-in counter (issue 18). A parent that spawns many children keeps their count on
-- a few stripe rows beside its steps row, so the completions of its children lock a stripe each
-- (whichever is free) instead of all queueing on the parent's row; the parent's row is touched
-- only when a stripe runs dry. How the counter works, at the head of internals/_fan_in.
-- A row lives while its parent waits: it is deleted when the parent's counter reaches zero or the
-- parent ends, so the table holds only the fan-ins in flight (no foreign key: nothing cascades
-- into it when runs are purged).
begin;
set local role pgflight_owner;

create table pgflight.fan_in_stripes (
  parent_id  bigint not null,
  stripe     smallint not null,
  pending    integer not null,
  allotted   integer not null,
  primary key (parent_id, stripe),
  constraint pending_is_not_negative check (pending >= 0),
  constraint pending_within_allotted check (pending <= allotted)
) with (fillfactor = 50);
comment on table pgflight.fan_in_stripes is
  'Striped fan-in counter: pending children of parent_id counted on this stripe (of allotted at '
  'spawn). The parent''s steps.children_pending counts the allotment of each stripe not yet dry, '
  'plus the children counted on no stripe; it reaches zero when the last child ends.';

commit;
