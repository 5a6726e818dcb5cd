-- Deploy pgflight:tables/firehose_by_agent_run
-- requires: tables/traces tables/costs tables/costs_lease_lost indexes/inspector_reads tables/events_by_day tables/agent_runs
-- Issue 18: the agent firehose (traces: ~4 rows per agent iteration; costs: one per model call) is
-- range-partitioned by agent_run_id, so retention drops whole partitions instead of deleting rows.
-- Why agent_run_id and not a time column: a partitioned table's unique keys must contain the
-- partition key, and these keys are what make the writes idempotent (traces: (agent_run_id,
-- iteration, seq) and (agent_run_id, tool_use_id, block_type); costs: (agent_run_id, iteration)
-- and (agent_run_id, iteration, attempt_id)). Every one already leads with agent_run_id, so they
-- stay exactly as they were and the ON CONFLICT paths of record_trace, record_model_call,
-- mark_tool_call, complete_tool_call(s) and record_orphan_cost are unchanged. Adding created_at to
-- them would make a repeated write of the same block at another moment a second row. agent_run_id
-- never changes on UPDATE (traces go in_flight -> completed in place), and agent run ids grow with
-- time (identity), so a partition holds the agent runs of one stretch of time.
-- Partitions: traces_from_<lo> / costs_from_<lo> for agent_run_id in [lo, lo + width) with width
-- settings.agent_runs_per_partition (default 100,000), created ahead by maintain_partitions, and
-- traces_default / costs_default for ids past them. A partition is dropped (both tables at once)
-- when its whole id range has been drawn and no agent run in it is left, i.e. purge_finished has
-- purged every run it belonged to (settings.purge_after_s): so no row of a live run is ever dropped.
-- For that the two tables no longer reference agent_runs (no ON DELETE CASCADE): purging a run no
-- longer deletes its traces and costs row by row; they stay, unreachable through the readers (which
-- start from the agent run), until their partition goes. The row type, columns, defaults, checks,
-- comments, ids (same sequences, kept names) and index names are kept.
begin;
set local role pgflight_owner;

alter table pgflight.settings
  add column agent_runs_per_partition bigint not null default 100000,
  add constraint agent_runs_per_partition_in_range check (agent_runs_per_partition between 1000 and 1000000000);
comment on column pgflight.settings.agent_runs_per_partition is
  'Width of a traces/costs partition in agent run ids (1,000..1,000,000,000, default 100,000): about a day of '
  'agent runs. A partition is dropped when every agent run in it is purged (purge_after_s), so a wider one '
  'keeps the traces of purged runs longer, a narrower one makes more partitions. Applies to partitions '
  'created from then on.';

do $$
declare
  v_width bigint := 100000;
  v_next bigint;  -- the next agent run id to be drawn
  v_old bigint;
  v_table text;
  v_seq text;
begin
  select case when s.is_called then s.last_value + 1 else s.last_value end into v_next
    from pgflight.agent_runs_id_seq s;
  v_old := (v_next / v_width) * v_width;  -- the agent runs so far in one partition, then aligned ranges
  foreach v_table in array array['traces', 'costs'] loop
    if exists (select from pg_catalog.pg_depend d join pg_catalog.pg_rewrite rw on rw.oid = d.objid
                where d.classid = 'pg_catalog.pg_rewrite'::regclass
                  and d.refobjid = ('pgflight.' || v_table)::regclass and rw.ev_class <> d.refobjid) then
      raise exception 'a view reads pgflight.%: re-point it in this conversion', v_table;
    end if;
    execute format('alter table pgflight.%I rename to %I', v_table, v_table || '_unpartitioned');
    -- free the constraint and index names (the copy reads the old table by a sequential scan)
    if v_table = 'traces' then
      alter table pgflight.traces_unpartitioned drop constraint block_is_unique;
      drop index pgflight.traces_tool_call_idx;
    else
      alter table pgflight.costs_unpartitioned drop constraint costs_pkey;
      drop index pgflight.one_call_per_iteration, pgflight.one_orphan_per_attempt, pgflight.costs_run_idx,
                 pgflight.costs_at_idx;
    end if;
    v_seq := v_table || '_ids';
    execute format('create sequence pgflight.%I', v_seq);
    execute format('create table pgflight.%I (like pgflight.%I including defaults including constraints '
                   'including comments) partition by range (agent_run_id)', v_table, v_table || '_unpartitioned');
    execute format('alter table pgflight.%I alter column id set default nextval(%L)', v_table, 'pgflight.' || v_seq);
    execute format('alter sequence pgflight.%I owned by pgflight.%I.id', v_seq, v_table);
    execute format('create table pgflight.%I partition of pgflight.%I default', v_table || '_default', v_table);
    if v_old > 0 then
      execute format('create table pgflight.%I partition of pgflight.%I for values from (0) to (%s)',
                     v_table || '_from_0', v_table, v_old);
    end if;
    execute format('create table pgflight.%I partition of pgflight.%I for values from (%s) to (%s)',
                   v_table || '_from_' || v_old, v_table, v_old, v_old + v_width);
  end loop;

  alter table pgflight.traces add constraint block_is_unique primary key (agent_run_id, iteration, seq);
  create unique index traces_tool_call_idx on pgflight.traces (agent_run_id, tool_use_id, block_type)
    where tool_use_id is not null;
  alter table pgflight.costs add constraint costs_pkey primary key (id, agent_run_id);
  create unique index one_call_per_iteration on pgflight.costs (agent_run_id, iteration) where not lease_lost;
  create unique index one_orphan_per_attempt on pgflight.costs (agent_run_id, iteration, attempt_id) where lease_lost;
  create index costs_run_idx on pgflight.costs (run_id);
  create index costs_at_idx on pgflight.costs (at);

  insert into pgflight.traces select * from pgflight.traces_unpartitioned;
  insert into pgflight.costs select * from pgflight.costs_unpartitioned;
  -- ids go on past every id drawn so far
  perform setval('pgflight.traces_ids', greatest(coalesce((select max(id) from pgflight.traces), 0),
                                                 (select last_value from pgflight.traces_id_seq)) + 1, false);
  perform setval('pgflight.costs_ids', greatest(coalesce((select max(id) from pgflight.costs), 0),
                                                (select last_value from pgflight.costs_id_seq)) + 1, false);
  drop table pgflight.traces_unpartitioned;  -- with its identity sequence traces_id_seq and its foreign key
  drop table pgflight.costs_unpartitioned;
  alter sequence pgflight.traces_ids rename to traces_id_seq;
  alter sequence pgflight.costs_ids rename to costs_id_seq;
end
$$;

comment on table pgflight.traces is
  'Flight recorder, one row per block: role user|assistant|system, block_type thinking|text|tool_use|'
  'tool_result|api_error, content: the block as sent to or received from the Messages API, status '
  'completed|in_flight|interrupted (tool results), tokens: estimated tokens of the block (exact usage '
  'per call is in pgflight.costs), attempt_id: the attempt that wrote it. Range-partitioned by agent_run_id '
  '(issue 18): a partition is dropped once every agent run in it is purged.';
comment on table pgflight.costs is
  'One row per model call: tokens (input, output, cache_creation, cache_read), usd (USD = tokens x '
  'model_prices / 1e6), the stop_reason, the transient errors retried before it (retries), and which '
  'agent, step, run and workspace it is billed to. Range-partitioned by agent_run_id (issue 18): a partition '
  'is dropped once every agent run in it is purged.';

commit;
