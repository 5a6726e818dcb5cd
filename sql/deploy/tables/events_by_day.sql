-- Deploy pgflight:tables/events_by_day
-- requires: tables/events tables/settings internals/_clock views/run_events
-- Issue 18: the transition log is the firehose (a row per transition, three or more per step), and
-- deleting it run by run was the cost of retention. Now it is range-partitioned by day on `at`
-- (UTC days, native partitioning): pgflight.maintain_partitions() (called by every sweep pass)
-- creates the days ahead and drops whole days older than settings.events_keep_s, so retention is
-- a DROP TABLE of a day, not a DELETE of its rows. A row whose day has no partition (the fake
-- clock of a test, a clock far off) lands in events_default; maintain_partitions moves such rows
-- into their day when it creates it, and deletes those past retention in bounded batches.
-- The conversion: the old table is renamed, the partitioned one created under the old name with
-- the same columns, the rows moved, every view that read the old table re-pointed at the new one
-- (its definition and options kept), and the old table dropped. The primary key becomes (id, at)
-- (a partitioned table's unique keys include the partition key); ids still come from one sequence,
-- still named events_id_seq.
begin;
set local role pgflight_owner;

alter table pgflight.settings
  add column events_keep_s double precision not null default 604800,
  add column partitions_ahead_days integer not null default 3,
  add constraint events_keep_is_positive check (events_keep_s > 0),
  add constraint partitions_ahead_in_range check (partitions_ahead_days between 1 and 90);
comment on column pgflight.settings.events_keep_s is
  'Retention of the transition log (pgflight.events), seconds: a day partition is dropped once its end is '
  'older than this. Default 7 days. Independent of purge_after_s (finished runs).';
comment on column pgflight.settings.partitions_ahead_days is
  'How many days of events partitions maintain_partitions keeps created ahead of today (1..90, default 3).';

do $$
declare
  v_views text[];
  v_defs text[];
  v_opts text[];
  v_today date := (pgflight._now() at time zone 'UTC')::date;
  v_day date;
  i integer;
begin
  -- the views reading events, to re-point after the swap (a view is bound to the table, not its name)
  select coalesce(array_agg(v.name order by v.name), '{}'), coalesce(array_agg(v.def order by v.name), '{}'),
         coalesce(array_agg(v.opts order by v.name), '{}')
    into v_views, v_defs, v_opts
    from (select distinct c.oid::regclass::text as name, pg_catalog.pg_get_viewdef(c.oid) as def,
                 coalesce(' with (' || array_to_string(c.reloptions, ', ') || ')', '') as opts
            from pg_catalog.pg_depend d
            join pg_catalog.pg_rewrite rw on rw.oid = d.objid
            join pg_catalog.pg_class c on c.oid = rw.ev_class
           where d.classid = 'pg_catalog.pg_rewrite'::regclass
             and d.refobjid = 'pgflight.events'::regclass and c.oid <> 'pgflight.events'::regclass) v;

  alter table pgflight.events rename to events_unpartitioned;
  alter table pgflight.events_unpartitioned rename constraint events_pkey to events_unpartitioned_pkey;
  alter index pgflight.events_run_idx rename to events_unpartitioned_run_idx;

  create sequence pgflight.event_ids;
  create table pgflight.events (
    id           bigint not null default nextval('pgflight.event_ids'),
    at           timestamptz not null default pgflight._now(),
    run_id       bigint,
    step_id      bigint,
    attempt_id   bigint,
    from_status  text,
    to_status    text,
    worker_id    bigint,
    actor        text,
    reason       text not null,
    detail       jsonb,
    constraint events_pkey primary key (id, at)
  ) partition by range (at);
  alter sequence pgflight.event_ids owned by pgflight.events.id;
  create index events_run_idx on pgflight.events (run_id, id);
  create table pgflight.events_default partition of pgflight.events default;
  for i in -1 .. 3 loop
    v_day := v_today + i;
    execute format('create table pgflight.%I partition of pgflight.events for values from (%L) to (%L)',
                   'events_' || to_char(v_day, 'YYYYMMDD'), v_day::timestamp at time zone 'UTC',
                   (v_day + 1)::timestamp at time zone 'UTC');
  end loop;

  insert into pgflight.events (id, at, run_id, step_id, attempt_id, from_status, to_status, worker_id, actor,
                               reason, detail)
  select id, at, run_id, step_id, attempt_id, from_status, to_status, worker_id, actor, reason, detail
    from pgflight.events_unpartitioned;
  -- past every id drawn so far: the rows' and those the attempts took for their derived events
  -- (claim_event_id, finish_event_id draw from the same sequence, tables/step_attempts_event_ids)
  perform setval('pgflight.event_ids',
                 greatest(coalesce((select max(id) from pgflight.events_unpartitioned), 0),
                          (select last_value from pgflight.events_id_seq)) + 1, false);

  for i in 1 .. cardinality(v_views) loop
    execute format('create or replace view %s%s as %s', v_views[i], v_opts[i], v_defs[i]);
  end loop;
  drop table pgflight.events_unpartitioned;  -- and its identity sequence events_id_seq
  -- the sequence keeps the name the transition functions draw from (nextval('pgflight.events_id_seq'))
  alter sequence pgflight.event_ids rename to events_id_seq;
end
$$;

comment on table pgflight.events is
  'Append-only log of transitions, partitioned by day on at (issue 18: retention drops whole days, '
  'settings.events_keep_s). reason names the event: queued, claimed, started, succeeded, '
  'failed, retry_scheduled, lease_expired, deadline_exceeded, dead_lettered, released, cancel_requested, '
  'cancelled, children_spawned, parent_resumed, approval_requested, approval_decided, '
  'stale_result_rejected, retried, replayed, budget_exceeded.';

commit;
