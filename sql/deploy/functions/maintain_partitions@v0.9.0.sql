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
--      per call and table.
-- Detaching and attaching lock the parent table briefly; each action waits at most 200 ms for its
-- lock (lock_timeout, local to the action) and is otherwise left for the next call, so the log's
-- writers are never stalled behind it for longer. Returns one row per action taken.
-- The traces partitions by agent run id (costs has the same bounds): [lo, hi) of each traces_from_<lo>.
create or replace function pgflight._firehose_partitions()
returns table (lo bigint, hi bigint)
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  select m[1]::bigint, m[2]::bigint
    from pg_catalog.pg_inherits i
    join pg_catalog.pg_class c on c.oid = i.inhrelid
    cross join lateral pg_catalog.regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid),
                                               'FROM \(''?(-?[0-9]+)''?\) TO \(''?(-?[0-9]+)''?\)') m
   where i.inhparent = 'pgflight.traces'::pg_catalog.regclass and c.relname ~ '^traces_from_[0-9]+$'
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
  v_next bigint;
  v_width bigint;
  v_to bigint;
  v_from bigint;
  v_table text;
  v_moved bigint[] := '{}';  -- rows moved out of the default partitions, traces then costs
  i integer;
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

  -- 4. traces and costs, by ranges of agent run ids
  select case when q.is_called then q.last_value + 1 else q.last_value end into v_next from pgflight.agent_runs_id_seq q;
  select s.agent_runs_per_partition into v_width from pgflight.settings s;
  for i in 1 .. 10 loop  -- a few per call: a jump past them lands in the default partitions meanwhile
    select coalesce(max(b.hi), 0) into v_to from pgflight._firehose_partitions() b;
    exit when v_to - v_next >= v_width / 2;  -- half a partition or more ahead
    begin
      perform set_config('lock_timeout', '200ms', true);
      foreach v_table in array array['traces', 'costs'] loop
        v_name := v_table || '_from_' || v_to;
        -- no insert lands in the default partition between the move and the attach
        execute format('lock table pgflight.%I in exclusive mode', v_table || '_default');
        execute format('create table pgflight.%I (like pgflight.%I including defaults including constraints)',
                       v_name, v_table);
        execute format('with m as (delete from pgflight.%I d where d.agent_run_id >= %s and d.agent_run_id < %s '
                       'returning d.*) insert into pgflight.%I select * from m',
                       v_table || '_default', v_to, v_to + v_width, v_name);
        get diagnostics v_rows = row_count;
        execute format('alter table pgflight.%I attach partition pgflight.%I for values from (%s) to (%s)',
                       v_table, v_name, v_to, v_to + v_width);
        v_moved := v_moved || v_rows;
      end loop;
    exception when lock_not_available or duplicate_table then
      exit;  -- the next call creates it (or a concurrent call just did)
    end;
    return query select t || '_from_' || v_to, 'created'::text, m
                   from unnest(array['traces', 'costs'], v_moved) x(t, m);
    v_moved := '{}';
  end loop;
  for v_from, v_to in select b.lo, b.hi from pgflight._firehose_partitions() b where b.hi <= v_next order by b.lo loop
    continue when exists (select from pgflight.agent_runs a where a.id >= v_from and a.id < v_to);
    begin
      perform set_config('lock_timeout', '200ms', true);
      lock table pgflight.traces, pgflight.costs in access exclusive mode;
      continue when exists (select from pgflight.agent_runs a where a.id >= v_from and a.id < v_to);
      foreach v_table in array array['traces', 'costs'] loop
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

  -- 5. strays of the default partitions whose agent run is gone, bounded
  foreach v_table in array array['traces', 'costs'] loop
    execute format('delete from pgflight.%1$I t where t.ctid = any (array(select d.ctid from pgflight.%1$I d '
                   'where not exists (select from pgflight.agent_runs a where a.id = d.agent_run_id) limit %2$s))',
                   v_table || '_default', p_limit);
    get diagnostics v_rows = row_count;
    if v_rows > 0 then
      return query select v_table || '_default', 'purged'::text, v_rows;
    end if;
  end loop;

  update pgflight.sweep_state set last_partitions_at = v_now;
end
$$;
comment on function pgflight.maintain_partitions(integer) is
  'Sweep: create the events day partitions ahead (settings.partitions_ahead_days), drop those past '
  'settings.events_keep_s, purge at most p_limit stray rows of events_default; create the traces/costs '
  'partitions ahead (settings.agent_runs_per_partition agent run ids each), drop those whose agent runs are '
  'all purged, purge at most p_limit stray rows of their default partitions; one row per action.';
grant execute on function pgflight.maintain_partitions(integer) to pgflight_operator;

commit;
