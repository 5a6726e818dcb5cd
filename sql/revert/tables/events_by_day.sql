-- Revert pgflight:tables/events_by_day
-- Back to one plain table with the rows of every partition; the views re-pointed as in deploy.
begin;
set local role pgflight_owner;

do $$
declare
  v_views text[];
  v_defs text[];
  v_opts text[];
  i integer;
begin
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

  alter table pgflight.events rename to events_partitioned;
  alter table pgflight.events_partitioned rename constraint events_pkey to events_partitioned_pkey;
  alter index pgflight.events_run_idx rename to events_partitioned_run_idx;
  alter sequence pgflight.events_id_seq rename to events_partitioned_id_seq;  -- the name goes to the identity

  create table pgflight.events (
    id           bigint generated always as identity primary key,
    at           timestamptz not null default pgflight._now(),
    run_id       bigint,
    step_id      bigint,
    attempt_id   bigint,
    from_status  text,
    to_status    text,
    worker_id    bigint,
    actor        text,
    reason       text not null,
    detail       jsonb
  );
  create index events_run_idx on pgflight.events (run_id, id);
  insert into pgflight.events (id, at, run_id, step_id, attempt_id, from_status, to_status, worker_id, actor,
                               reason, detail)
  overriding system value
  select id, at, run_id, step_id, attempt_id, from_status, to_status, worker_id, actor, reason, detail
    from pgflight.events_partitioned order by id;
  perform setval(pg_catalog.pg_get_serial_sequence('pgflight.events', 'id'),
                 greatest(coalesce((select max(id) from pgflight.events_partitioned), 0),
                          (select last_value from pgflight.events_partitioned_id_seq)) + 1, false);

  for i in 1 .. cardinality(v_views) loop
    execute format('create or replace view %s%s as %s', v_views[i], v_opts[i], v_defs[i]);
  end loop;
  drop table pgflight.events_partitioned;  -- its partitions and its sequence with it
end
$$;
comment on table pgflight.events is
  'Append-only log of transitions. reason names the event: queued, claimed, started, succeeded, '
  'failed, retry_scheduled, lease_expired, deadline_exceeded, dead_lettered, released, cancel_requested, '
  'cancelled, children_spawned, parent_resumed, approval_requested, approval_decided, '
  'stale_result_rejected, retried, replayed, budget_exceeded.';

alter table pgflight.settings
  drop column events_keep_s,
  drop column partitions_ahead_days;

commit;
