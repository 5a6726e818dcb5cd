-- Prototype (not a migration): the queue and lease state of an attempt in narrow tables
-- of their own, so that the attempt's own updates touch no indexed column and stay HOT, beside
-- today's shape. Standalone: it creates schema proto_queue in the database it runs in (drops it
-- first), measures, prints, and leaves the tables for inspection. Prints figures; not a test.
--
--   psql -X -q -v steps=20000 -v batch=8 [-v s1=b -v s2=c -v s3=a] -f bench/prototypes/narrow_queue_prototype.sql DB
--   python bench/prototypes/narrow_queue_prototype.py --steps 20000 --rounds 3   (a throwaway cluster, rounds
--                                                                     alternating, medians)
--
-- Needs a superuser (the backend's CPU is read from /proc/self/stat with pg_read_file) and
-- pg_walinspect (PostgreSQL 15 contrib) for the split by relation. -v ff=N: the fillfactor of the
-- attempts of b and c (default 50).
--
-- Shapes, each with the columns of pgflight.step_attempts (fillfactor 80) and no-op steps of one
-- workspace and recipe: a submit inserts --steps attempts in batches of 500, then claim (batch
-- attempts with FOR UPDATE SKIP LOCKED, one transaction) and complete (the same attempts, one
-- transaction) alternate until every attempt is done, as a burn-down does:
--   a  today: every index of step_attempts (pkey, attempt_no unique, one live per step, the two
--      ready indexes, leased, deadline, the two event-id indexes and the partial indexes that
--      take no no-op row); claim and complete are status updates, non-HOT by construction.
--   b  the queue and lease in narrow tables: submit inserts the attempt (pkey, attempt_no unique:
--      no index names status or a claim column) and a queue row (the two ready indexes, no
--      pkey: a cancel finds it by the ready key it reads from the attempt); a claim deletes the
--      queue rows it picks, inserts lease rows (pkey, leased by workspace, deadline) and
--      updates the attempts (HOT); complete deletes the lease rows and updates the attempts (HOT).
--   c  as b, but the claim writes only the lease row (the claim's fields live there while the
--      lease lasts) and the attempt is updated once, at the end, with the claim's and the end's
--      fields: the floor of the narrow shape.
-- The event-id columns (claim_event_id, finish_event_id) are set in every shape; in b and c they
-- have no index (an index on them would make the updates non-HOT again; see the report).
\set ON_ERROR_STOP on
\if :{?steps}
\else
  \set steps 20000
\endif
\if :{?batch}
\else
  \set batch 8
\endif

drop schema if exists proto_queue cascade;
create schema proto_queue;
create extension if not exists pg_walinspect;
create sequence proto_queue.tokens;
create sequence proto_queue.event_ids;
create table proto_queue.wal_records (shape text, what text, records numeric, bytes numeric, fpi_bytes numeric);
create table proto_queue.results (shape text, phase text, steps int, wal_bytes numeric, cpu_ms numeric,
                                  wall_ms numeric, hot_updates bigint, updates bigint, lsn0 pg_lsn, lsn1 pg_lsn);

-- The columns of pgflight.step_attempts (v0.7.0), in its order.
create function proto_queue.attempts_table(p_name text, p_fillfactor int) returns void language plpgsql as $$
begin
  execute format($t$
    create table proto_queue.%I (
      id bigint generated always as identity primary key, step_id bigint not null, run_id bigint not null,
      attempt_no integer not null, recipe text not null, priority integer not null default 0,
      status text not null default 'queued', available_after timestamptz not null, worker_id bigint,
      fencing_token bigint, lease_s double precision, claimed_at timestamptz, started_at timestamptz,
      lease_expires_at timestamptz, deadline_at timestamptz, finished_at timestamptz, result jsonb,
      error jsonb, reason text, created_at timestamptz not null default now(), workspace_id bigint not null,
      concurrency_key text, concurrency_limit integer, claim_event_id bigint, finish_event_id bigint,
      slots smallint not null default 0, queue_event_id bigint,
      constraint %I check (status in ('queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children',
        'awaiting_approval', 'succeeded', 'failed', 'lease_expired', 'timed_out', 'dead_letter', 'cancelled')),
      constraint %I unique (step_id, attempt_no),
      constraint %I check (finished_at is null or claimed_at is null or finished_at >= claimed_at)
    ) with (fillfactor = %s)$t$, p_name, p_name || '_status_is_known', p_name || '_attempt_no_is_unique',
    p_name || '_finished_after_claimed', p_fillfactor);
end $$;

select proto_queue.attempts_table('a_attempts', 80) \g /dev/null
alter table proto_queue.a_attempts add constraint a_leased_has_owner check (
  status not in ('claimed', 'running', 'cancel_requested')
  or (worker_id is not null and fencing_token is not null and lease_expires_at is not null));
create index on proto_queue.a_attempts (deadline_at) where status in ('claimed', 'running') and deadline_at is not null;
create index on proto_queue.a_attempts (status, step_id) where status in ('awaiting_children', 'awaiting_approval');
create unique index on proto_queue.a_attempts (step_id)
  where status in ('queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children', 'awaiting_approval');
create index on proto_queue.a_attempts (id) where status = 'dead_letter';
create index on proto_queue.a_attempts (workspace_id, priority desc, available_after, id)
  where status = 'queued' and available_after < 'infinity';
create index on proto_queue.a_attempts (recipe, workspace_id, priority desc, available_after, id)
  where status = 'queued' and available_after < 'infinity';
create index on proto_queue.a_attempts (workspace_id, concurrency_key, priority desc, id)
  where status = 'queued' and concurrency_key is not null;
create index on proto_queue.a_attempts (workspace_id) where status in ('claimed', 'running', 'cancel_requested');
create index on proto_queue.a_attempts (workspace_id, concurrency_key)
  where status in ('claimed', 'running', 'cancel_requested') and concurrency_key is not null;
create index on proto_queue.a_attempts (claim_event_id) where claim_event_id is not null;
create index on proto_queue.a_attempts (finish_event_id) where finish_event_id is not null;

-- b and c: the attempt keeps only indexes on columns no transition changes. Fillfactor 50: an
-- attempt grows by about 40 bytes when its claim's fields are filled in, and a HOT update needs
-- the new version on the same page (20,000 steps: at 80 a fifth of the updates found no room and
-- were not HOT; at 60 b 0.90 and c 0.87 were HOT, at 50 b 0.96 and c 1.00).
\if :{?ff}
\else
  \set ff 50
\endif
select proto_queue.attempts_table('b_attempts', :ff) \g /dev/null
select proto_queue.attempts_table('c_attempts', :ff) \g /dev/null
-- The ready queue: one row per queued (unparked) attempt, deleted when it is claimed.
create table proto_queue.b_queue (
  attempt_id bigint not null, step_id bigint not null, workspace_id bigint not null, recipe text not null,
  priority integer not null, available_after timestamptz not null, concurrency_key text
) with (fillfactor = 100);
create index on proto_queue.b_queue (workspace_id, priority desc, available_after, attempt_id);
create index on proto_queue.b_queue (recipe, workspace_id, priority desc, available_after, attempt_id);
-- -v live=1: the rule of one live attempt per step (today step_attempts_one_live_per_step_idx) as a
-- unique step_id in the queue and in the leases (the transitions' lock on the steps row keeps an
-- attempt from being in both); without it, neither table checks the rule.
\if :{?live}
create unique index on proto_queue.b_queue (step_id);
\endif
create table proto_queue.c_queue (like proto_queue.b_queue including all);
-- The leases: one row per leased attempt, inserted by the claim, deleted at its end; a heartbeat
-- updates lease_expires_at (no index: HOT).
create table proto_queue.b_leases (
  attempt_id bigint primary key, workspace_id bigint not null, worker_id bigint not null,
  fencing_token bigint not null, lease_expires_at timestamptz not null, deadline_at timestamptz,
  slots smallint not null default 0, concurrency_key text, step_id bigint not null
) with (fillfactor = 80);
create index on proto_queue.b_leases (workspace_id);
create index on proto_queue.b_leases (deadline_at) where deadline_at is not null;
-- c: the claim's fields are the lease row's until the end.
create table proto_queue.c_leases (
  attempt_id bigint primary key, workspace_id bigint not null, worker_id bigint not null,
  fencing_token bigint not null, lease_s double precision not null, claimed_at timestamptz not null,
  started_at timestamptz, lease_expires_at timestamptz not null, deadline_at timestamptz,
  claim_event_id bigint, slots smallint not null default 0, concurrency_key text, step_id bigint not null
) with (fillfactor = 80);
\if :{?live}
create unique index on proto_queue.b_leases (step_id);
create unique index on proto_queue.c_leases (step_id);
\endif
create index on proto_queue.c_leases (workspace_id);
create index on proto_queue.c_leases (deadline_at) where deadline_at is not null;

-- CPU seconds (utime + stime) of this backend so far, from /proc (clock ticks of 1/100 s).
create function proto_queue.cpu_ms() returns numeric language sql as $$
  select ((f[12])::numeric + (f[13])::numeric) * 10
    from (select regexp_split_to_array(split_part(pg_read_file('/proc/self/stat'), ') ', 2), ' ') f) s
$$;

-- Submit: p_n attempts in batches of 500, one transaction each, as submit_runs does.
create procedure proto_queue.submit(p_shape text, p_n int) language plpgsql as $$
declare
  v_i int := 0;
  v_step bigint := 0;
begin
  while v_i < p_n loop
    if p_shape = 'a' then
      insert into proto_queue.a_attempts (step_id, run_id, attempt_no, recipe, available_after, workspace_id, queue_event_id)
      select v_step + g, v_step + g, 1, 'noop', now(), 1, nextval('proto_queue.event_ids')
        from generate_series(v_i + 1, least(v_i + 500, p_n)) g;
    elsif p_shape = 'b' then
      with ins as (
        insert into proto_queue.b_attempts (step_id, run_id, attempt_no, recipe, available_after, workspace_id, queue_event_id)
        select v_step + g, v_step + g, 1, 'noop', now(), 1, nextval('proto_queue.event_ids')
          from generate_series(v_i + 1, least(v_i + 500, p_n)) g
        returning id, step_id, workspace_id, recipe, priority, available_after)
      insert into proto_queue.b_queue (attempt_id, step_id, workspace_id, recipe, priority, available_after)
      select id, step_id, workspace_id, recipe, priority, available_after from ins;
    else
      with ins as (
        insert into proto_queue.c_attempts (step_id, run_id, attempt_no, recipe, available_after, workspace_id, queue_event_id)
        select v_step + g, v_step + g, 1, 'noop', now(), 1, nextval('proto_queue.event_ids')
          from generate_series(v_i + 1, least(v_i + 500, p_n)) g
        returning id, step_id, workspace_id, recipe, priority, available_after)
      insert into proto_queue.c_queue (attempt_id, step_id, workspace_id, recipe, priority, available_after)
      select id, step_id, workspace_id, recipe, priority, available_after from ins;
    end if;
    commit;
    v_i := v_i + 500;
  end loop;
end $$;

-- Claim a batch, complete it; until nothing is queued. WAL of the claims and of the completions
-- summed apart (LSN before and after each statement; the commit records counted with neither).
create procedure proto_queue.drain(p_shape text, p_batch int, inout p_claim_wal numeric, inout p_complete_wal numeric,
                                   inout p_steps int)
language plpgsql as $$
declare
  v_ids bigint[];
  v_tokens bigint[];
  v_l0 pg_lsn;
  v_now timestamptz;
begin
  p_claim_wal := 0; p_complete_wal := 0; p_steps := 0;
  loop
    v_now := clock_timestamp();
    v_l0 := pg_current_wal_insert_lsn();
    if p_shape = 'a' then
      with c as (
        select a.id from proto_queue.a_attempts a
         where a.recipe = 'noop' and a.workspace_id = 1 and a.status = 'queued'
           and a.available_after <= v_now and a.available_after < 'infinity'
         order by a.priority desc, a.available_after, a.id limit p_batch
           for update skip locked),
      u as (
        update proto_queue.a_attempts a
           set status = 'running', worker_id = 1, fencing_token = nextval('proto_queue.tokens'), lease_s = 60,
               claimed_at = v_now, started_at = v_now, lease_expires_at = v_now + interval '60 s',
               deadline_at = v_now + interval '1 hour', claim_event_id = nextval('proto_queue.event_ids')
          from c where a.id = c.id
        returning a.id, a.fencing_token)
      select array_agg(id order by id), array_agg(fencing_token order by id) into v_ids, v_tokens from u;
    elsif p_shape = 'b' then
      with c as (
        select q.ctid as tid from proto_queue.b_queue q
         where q.recipe = 'noop' and q.workspace_id = 1 and q.available_after <= v_now
           and q.available_after < 'infinity'
         order by q.priority desc, q.available_after, q.attempt_id limit p_batch
           for update skip locked),
      d as (
        delete from proto_queue.b_queue q where q.ctid = any (array(select tid from c))
        returning q.attempt_id, q.workspace_id, q.step_id),
      l as (
        insert into proto_queue.b_leases (attempt_id, workspace_id, worker_id, fencing_token, lease_expires_at, deadline_at,
                                          step_id)
        select d.attempt_id, d.workspace_id, 1, nextval('proto_queue.tokens'), v_now + interval '60 s',
               v_now + interval '1 hour', d.step_id
          from d
        returning attempt_id, fencing_token, lease_expires_at, deadline_at),
      u as (
        update proto_queue.b_attempts a
           set status = 'running', worker_id = 1, fencing_token = l.fencing_token, lease_s = 60,
               claimed_at = v_now, started_at = v_now, lease_expires_at = l.lease_expires_at,
               deadline_at = l.deadline_at, claim_event_id = nextval('proto_queue.event_ids')
          from l where a.id = l.attempt_id
        returning a.id, a.fencing_token)
      select array_agg(id order by id), array_agg(fencing_token order by id) into v_ids, v_tokens from u;
    else
      with c as (
        select q.ctid as tid from proto_queue.c_queue q
         where q.recipe = 'noop' and q.workspace_id = 1 and q.available_after <= v_now
           and q.available_after < 'infinity'
         order by q.priority desc, q.available_after, q.attempt_id limit p_batch
           for update skip locked),
      d as (
        delete from proto_queue.c_queue q where q.ctid = any (array(select tid from c))
        returning q.attempt_id, q.workspace_id, q.step_id),
      l as (
        insert into proto_queue.c_leases (attempt_id, workspace_id, worker_id, fencing_token, lease_s, claimed_at,
                                          started_at, lease_expires_at, deadline_at, claim_event_id, step_id)
        select d.attempt_id, d.workspace_id, 1, nextval('proto_queue.tokens'), 60, v_now, v_now,
               v_now + interval '60 s', v_now + interval '1 hour', nextval('proto_queue.event_ids'), d.step_id
          from d
        returning attempt_id, fencing_token)
      select array_agg(attempt_id order by attempt_id), array_agg(fencing_token order by attempt_id)
        into v_ids, v_tokens from l;
    end if;
    p_claim_wal := p_claim_wal + (pg_current_wal_insert_lsn() - v_l0);
    commit;
    exit when v_ids is null;
    p_steps := p_steps + cardinality(v_ids);

    v_now := clock_timestamp();
    v_l0 := pg_current_wal_insert_lsn();
    if p_shape = 'a' then
      -- as _complete_many: the attempts locked in id order, then the update fenced by token
      perform from proto_queue.a_attempts a where a.id = any (v_ids) order by a.id for update;
      update proto_queue.a_attempts a
         set status = 'succeeded', finished_at = v_now, finish_event_id = nextval('proto_queue.event_ids')
        from unnest(v_ids, v_tokens) t(id, token)
       where a.id = t.id and a.fencing_token = t.token and a.status = 'running';
    elsif p_shape = 'b' then
      -- the lease row is the fence: deleting it (token checked) is the lock
      with d as (
        delete from proto_queue.b_leases l using unnest(v_ids, v_tokens) t(id, token)
         where l.attempt_id = t.id and l.fencing_token = t.token
        returning l.attempt_id)
      update proto_queue.b_attempts a
         set status = 'succeeded', finished_at = v_now, finish_event_id = nextval('proto_queue.event_ids')
        from d where a.id = d.attempt_id;
    else
      with d as (
        delete from proto_queue.c_leases l using unnest(v_ids, v_tokens) t(id, token)
         where l.attempt_id = t.id and l.fencing_token = t.token
        returning l.*)
      update proto_queue.c_attempts a
         set status = 'succeeded', worker_id = d.worker_id, fencing_token = d.fencing_token, lease_s = d.lease_s,
             claimed_at = d.claimed_at, started_at = d.started_at, lease_expires_at = d.lease_expires_at,
             deadline_at = d.deadline_at, claim_event_id = d.claim_event_id, finished_at = v_now,
             finish_event_id = nextval('proto_queue.event_ids')
        from d where a.id = d.attempt_id;
    end if;
    p_complete_wal := p_complete_wal + (pg_current_wal_insert_lsn() - v_l0);
    commit;
  end loop;
end $$;

create table proto_queue.a_queue (like proto_queue.b_queue);  -- empty: every shape vacuums three tables
create table proto_queue.a_leases (like proto_queue.b_leases);

-- The shapes in the order s1, s2, s3 (the driver alternates it between rounds).
\if :{?s1}
\else
  \set s1 a
  \set s2 b
  \set s3 c
\endif
\echo steps :steps batch :batch order :s1 :s2 :s3
\set s :s1
\ir narrow_queue_prototype_shape.psql
\set s :s2
\ir narrow_queue_prototype_shape.psql
\set s :s3
\ir narrow_queue_prototype_shape.psql

\pset footer off
select shape, phase, steps, round(wal_bytes / steps) as wal_b_per_step,
       round(cpu_ms / steps, 4) as cpu_ms_per_step, round(wall_ms / steps, 4) as wall_ms_per_step,
       case when updates > 0 then round(hot_updates::numeric / updates, 3) end as hot_ratio
  from proto_queue.results order by shape, phase;
-- WAL by relation and record type over each shape's submit and drain (vacuum not included),
-- per step: records, bytes without full-page images, the images' bytes.
select shape, what, round(records / :steps, 2) as records_per_step, round(bytes / :steps) as bytes_per_step,
       round(fpi_bytes / :steps) as fpi_bytes_per_step
  from proto_queue.wal_records where (bytes + fpi_bytes) / :steps >= 2
 order by shape, bytes + fpi_bytes desc;
