-- Deploy pgflight:functions/maintain_partitions
begin;
set local role pgflight_owner;

-- Sweep (issue 18): keep the day partitions of pgflight.events (tables/events_by_day) and the agent
-- run id partitions of pgflight.traces and pgflight.costs (tables/firehose_by_agent_run).
--   1. today and settings.partitions_ahead_days days ahead exist (UTC days of pgflight._now()); a
--      day is created as a table of its own, filled with the rows events_default holds for it,
--      then attached, so no insert ever waits on the creation of an empty day;
--   2. every day partition whose end is older than settings.events_keep_s is detached and dropped
--      (retention without a DELETE);
--   3. rows of events_default older than that are deleted, at most p_limit per call;
--   4. traces and costs: partitions [lo, lo + settings.agent_runs_per_partition) are created (both
--      tables at once, filled from their default partitions the same way) until one whole partition
--      lies ahead of the next agent run id; a partition whose ids have all been drawn and in which no
--      agent run is left (purge_finished purged every run they belonged to) is dropped, checked again
--      under an ACCESS EXCLUSIVE lock on both tables so a run that committed meanwhile keeps it;
--   5. rows of traces_default / costs_default whose agent run is gone are deleted, at most p_limit
--      per call and table;
--   4-5 again for streams and stream_chunks (tables/streams), by run ids (settings.runs_per_stream_partition):
--      a partition goes once every run in it is purged;
--   6. workers stopped (deregistered) more than settings.workers_keep_s ago are deleted, at most
--      p_limit per call, unless one still holds a lease.
-- Detaching and attaching lock the parent table briefly; each action waits at most 200 ms for its
-- lock (lock_timeout, local to the action) and is otherwise left for the next call, so the log's
-- writers are never stalled behind it for longer. Returns one row per action taken.
-- [lo, hi) of each partition <parent>_from_<lo> of pgflight.<parent> (a table range-partitioned by an id).
create or replace function pgflight._id_partitions(p_parent text)
returns table (lo bigint, hi bigint)
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
begin
  return query
  select m[1]::bigint, m[2]::bigint
    from pg_catalog.pg_inherits i
    join pg_catalog.pg_class c on c.oid = i.inhrelid
    cross join lateral pg_catalog.regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid),
                                               'FROM \(''?(-?[0-9]+)''?\) TO \(''?(-?[0-9]+)''?\)') m
   where i.inhparent = ('pgflight.' || p_parent)::pg_catalog.regclass and c.relname ~ ('^' || p_parent || '_from_[0-9]+$');
end
$$;
comment on function pgflight._id_partitions(text) is
  'Internal: [lo, hi) of each id-range partition <parent>_from_<lo> of pgflight.<parent> (maintain_partitions).';

-- Steps 4 and 5 of maintain_partitions for one family of tables partitioned alike by the id of
-- pgflight.<p_ids> (p_tables[1] gives the bounds; traces and costs by agent_runs.id, streams and
-- stream_chunks by runs.id; each table's id column is agent_run_id / run_id):
--   4. partitions [lo, lo + p_width) are created (every table at once, filled from its default
--      partition) until half a partition or more lies ahead of the next id; a partition whose ids
--      have all been drawn and in which no row of pgflight.<p_ids> is left (purge_finished purged
--      them) is dropped, checked again under an ACCESS EXCLUSIVE lock on the tables so an id that
--      committed meanwhile keeps it;
--   5. rows of the default partitions whose id is gone are deleted, at most p_limit per table
--      (null: no limit).
create or replace function pgflight._maintain_id_partitions(p_tables text[], p_ids text, p_width bigint,
                                                            p_limit integer)
returns table (partition_name text, action text, moved_rows bigint)
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_col text := case p_ids when 'agent_runs' then 'agent_run_id' else 'run_id' end;
  v_next bigint;
  v_to bigint;
  v_from bigint;
  v_table text;
  v_name text;
  v_rows bigint;
  v_left boolean;
  v_moved bigint[] := '{}';
  i integer;
begin
  execute format('select case when q.is_called then q.last_value + 1 else q.last_value end from pgflight.%I q',
                 p_ids || '_id_seq') into v_next;
  for i in 1 .. 10 loop  -- a few per call: a jump past them lands in the default partitions meanwhile
    select coalesce(max(b.hi), 0) into v_to from pgflight._id_partitions(p_tables[1]) b;
    -- ids far past the last partition (a cell's ids start at its cell number << 44,
    -- docs/scaling.md): the next partition starts at the width-aligned floor of the next id
    if v_next - v_to > p_width then
      v_to := v_next - v_next % p_width;
    end if;
    exit when v_to - v_next >= p_width / 2;  -- half a partition or more ahead
    begin
      perform set_config('lock_timeout', '200ms', true);
      foreach v_table in array p_tables loop
        v_name := v_table || '_from_' || v_to;
        -- no insert lands in the default partition between the move and the attach
        execute format('lock table pgflight.%I in exclusive mode', v_table || '_default');
        execute format('create table pgflight.%I (like pgflight.%I including defaults including constraints)',
                       v_name, v_table);
        execute format('with m as (delete from pgflight.%I d where d.%I >= %s and d.%I < %s '
                       'returning d.*) insert into pgflight.%I select * from m',
                       v_table || '_default', v_col, v_to, v_col, v_to + p_width, v_name);
        get diagnostics v_rows = row_count;
        execute format('alter table pgflight.%I attach partition pgflight.%I for values from (%s) to (%s)',
                       v_table, v_name, v_to, v_to + p_width);
        v_moved := v_moved || v_rows;
      end loop;
    exception when lock_not_available or duplicate_table then
      exit;  -- the next call creates it (or a concurrent call just did)
    end;
    return query select t || '_from_' || v_to, 'created'::text, m from unnest(p_tables, v_moved) x(t, m);
    v_moved := '{}';
  end loop;
  for v_from, v_to in select b.lo, b.hi from pgflight._id_partitions(p_tables[1]) b where b.hi <= v_next order by b.lo loop
    execute format('select exists (select from pgflight.%I a where a.id >= %s and a.id < %s)', p_ids, v_from, v_to)
      into v_left;
    continue when v_left;
    begin
      perform set_config('lock_timeout', '200ms', true);
      execute format('lock table %s in access exclusive mode',
                     (select string_agg(format('pgflight.%I', t), ', ') from unnest(p_tables) t));
      execute format('select exists (select from pgflight.%I a where a.id >= %s and a.id < %s)', p_ids, v_from, v_to)
        into v_left;
      continue when v_left;
      foreach v_table in array p_tables loop
        v_name := v_table || '_from_' || v_from;
        if to_regclass('pgflight.' || v_name) is not null then
          execute format('drop table pgflight.%I', v_name);
          return query select v_name, 'dropped'::text, null::bigint;
        end if;
      end loop;
    exception when lock_not_available then
      null;  -- the next call drops it
    end;
  end loop;

  foreach v_table in array p_tables loop
    execute format('delete from pgflight.%1$I t where t.ctid = any (array(select d.ctid from pgflight.%1$I d '
                   'where not exists (select from pgflight.%3$I a where a.id = d.%4$I) limit %2$s))',
                   v_table || '_default', coalesce(p_limit::text, 'all'), p_ids, v_col);  -- null: no row limit
    get diagnostics v_rows = row_count;
    if v_rows > 0 then
      return query select v_table || '_default', 'purged'::text, v_rows;
    end if;
  end loop;
end
$$;
comment on function pgflight._maintain_id_partitions(text[], text, bigint, integer) is
  'Internal: create ahead / drop when purged the id-range partitions of a family of tables, purge at most '
  'p_limit stray rows of their default partitions (maintain_partitions steps 4 and 5).';

-- The traces partitions by agent run id (costs has the same bounds): [lo, hi) of each traces_from_<lo>.
create or replace function pgflight._firehose_partitions()
returns table (lo bigint, hi bigint)
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  select b.lo, b.hi from pgflight._id_partitions('traces') b
$$;
comment on function pgflight._firehose_partitions() is
  'Internal: [lo, hi) of each traces/costs partition by agent run id (maintain_partitions).';

create or replace function pgflight.maintain_partitions(p_limit integer default 10000)
returns table (partition_name text, action text, moved_rows bigint)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := pgflight._now();
  v_today date := (pgflight._now() at time zone 'UTC')::date;
  v_keep double precision;
  v_ahead integer;
  v_cut timestamptz;
  v_day date;
  v_lo timestamptz;
  v_hi timestamptz;
  v_name text;
  v_rows bigint;
  v_workers_keep double precision;
begin
  perform pgflight._require_lane('operator', null, 'maintain_partitions');  -- acts on every workspace
  perform pgflight._check_limit(p_limit);
  select s.events_keep_s, s.partitions_ahead_days into v_keep, v_ahead from pgflight.settings s;
  v_cut := v_now - make_interval(secs => v_keep);

  -- 1. the days ahead
  for v_day in select d::date from generate_series(v_today, v_today + v_ahead, interval '1 day') d loop
    v_name := 'events_' || to_char(v_day, 'YYYYMMDD');
    v_lo := v_day::timestamp at time zone 'UTC';
    v_hi := (v_day + 1)::timestamp at time zone 'UTC';
    continue when to_regclass('pgflight.' || v_name) is not null or v_hi <= v_cut;
    begin
      perform set_config('lock_timeout', '200ms', true);
      execute format('create table pgflight.%I (like pgflight.events including defaults including constraints)', v_name);
      execute format('with m as (delete from pgflight.events_default e where e.at >= %L and e.at < %L returning e.*) '
                     'insert into pgflight.%I select * from m', v_lo, v_hi, v_name);
      get diagnostics v_rows = row_count;
      execute format('alter table pgflight.events attach partition pgflight.%I for values from (%L) to (%L)',
                     v_name, v_lo, v_hi);
      return query select v_name, 'created'::text, v_rows;
    exception when lock_not_available then
      null;  -- the next call creates it
    end;
  end loop;

  -- 2. the days past retention
  for v_name, v_hi in
    select c.relname::text, (to_date(substr(c.relname, 8), 'YYYYMMDD') + 1)::timestamp at time zone 'UTC'
      from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = 'pgflight.events'::regclass and c.relname ~ '^events_[0-9]{8}$'
     order by c.relname
  loop
    continue when v_hi > v_cut;
    begin
      perform set_config('lock_timeout', '200ms', true);
      execute format('alter table pgflight.events detach partition pgflight.%I', v_name);
      execute format('drop table pgflight.%I', v_name);
      return query select v_name, 'dropped'::text, null::bigint;
    exception when lock_not_available then
      null;  -- the next call drops it
    end;
  end loop;

  -- 3. strays of the default partition past retention, bounded
  delete from pgflight.events_default e
   where e.ctid = any (array(select d.ctid from pgflight.events_default d where d.at < v_cut limit p_limit));
  get diagnostics v_rows = row_count;
  if v_rows > 0 then
    return query select 'events_default'::text, 'purged'::text, v_rows;
  end if;

  -- 4-5. traces and costs by agent run ids; streams and stream_chunks by run ids (tables/streams,
  -- absent until that change is deployed)
  return query select * from pgflight._maintain_id_partitions(array['traces', 'costs'], 'agent_runs',
                                                               (select s.agent_runs_per_partition from pgflight.settings s),
                                                               p_limit);
  if to_regclass('pgflight.stream_chunks') is not null then
    return query select * from pgflight._maintain_id_partitions(
      array['streams', 'stream_chunks'], 'runs',
      (select (to_jsonb(s) ->> 'runs_per_stream_partition')::bigint from pgflight.settings s), p_limit);
  end if;

  -- 6. stopped workers past settings.workers_keep_s, bounded. A worker that still holds a lease
  -- (deregister_worker releases them, so none should) is kept. Nothing refers to a worker by a
  -- foreign key: attempts and events keep its id as a plain number, and every read joins it
  -- with a LEFT JOIN or a probe that a missing worker fails (a fenced write: the attempt is
  -- finished or released by then).
  select s.workers_keep_s into v_workers_keep from pgflight.settings s;
  delete from pgflight.workers w
   where w.id = any (array(
           select k.id from pgflight.workers k
            where k.stopped_at < v_now - make_interval(secs => v_workers_keep)
              and k.id <> all (array(select distinct a.worker_id from pgflight.step_attempts a
                                      where a.status in ('claimed', 'running', 'cancel_requested')
                                        and a.worker_id is not null))
            limit p_limit));
  get diagnostics v_rows = row_count;
  if v_rows > 0 then
    return query select 'workers'::text, 'purged'::text, v_rows;
  end if;

  update pgflight.sweep_state set last_partitions_at = v_now;
end
$$;
comment on function pgflight.maintain_partitions(integer) is
  'Sweep: create the events day partitions ahead (settings.partitions_ahead_days), drop those past '
  'settings.events_keep_s, purge at most p_limit stray rows of events_default; create the traces/costs '
  'partitions ahead (settings.agent_runs_per_partition agent run ids each), drop those whose agent runs are '
  'all purged, purge at most p_limit stray rows of their default partitions; delete at most p_limit workers '
  'stopped more than settings.workers_keep_s ago; one row per action.';
grant execute on function pgflight.maintain_partitions(integer) to pgflight_operator;

commit;
