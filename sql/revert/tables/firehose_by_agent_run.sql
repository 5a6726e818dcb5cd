-- Revert pgflight:tables/firehose_by_agent_run
-- Back to plain traces and costs with every row whose agent run still exists (the rows of purged
-- runs, which the partitioned tables keep until their partition is dropped, go: the restored
-- foreign keys with ON DELETE CASCADE would refuse them), the same ids, identity columns again.
begin;
set local role pgflight_owner;

do $$
declare
  v_table text;
begin
  foreach v_table in array array['traces', 'costs'] loop
    execute format('alter table pgflight.%I rename to %I', v_table, v_table || '_partitioned');
    execute format('alter sequence pgflight.%I rename to %I', v_table || '_id_seq', v_table || '_partitioned_id_seq');
    execute format('create table pgflight.%I (like pgflight.%I including defaults including constraints '
                   'including comments)', v_table, v_table || '_partitioned');
    execute format('alter table pgflight.%I alter column id drop default, '
                   'alter column id add generated always as identity', v_table);
    execute format('alter table pgflight.%I add foreign key (agent_run_id) references pgflight.agent_runs (id) '
                   'on delete cascade', v_table);
    execute format('insert into pgflight.%I overriding system value select * from pgflight.%I p '
                   'where exists (select from pgflight.agent_runs a where a.id = p.agent_run_id) order by p.id',
                   v_table, v_table || '_partitioned');
    execute format('select setval(pg_catalog.pg_get_serial_sequence(%L, ''id''), greatest('
                   'coalesce((select max(id) from pgflight.%I), 0), (select last_value from pgflight.%I)) + 1, false)',
                   'pgflight.' || v_table, v_table || '_partitioned', v_table || '_partitioned_id_seq');
    execute format('drop table pgflight.%I', v_table || '_partitioned');  -- its partitions and sequence with it
  end loop;
end
$$;
alter table pgflight.traces add constraint block_is_unique primary key (agent_run_id, iteration, seq);
create unique index traces_tool_call_idx on pgflight.traces (agent_run_id, tool_use_id, block_type)
  where tool_use_id is not null;
alter table pgflight.costs add constraint costs_pkey primary key (id);
create unique index one_call_per_iteration on pgflight.costs (agent_run_id, iteration) where not lease_lost;
create unique index one_orphan_per_attempt on pgflight.costs (agent_run_id, iteration, attempt_id) where lease_lost;
create index costs_run_idx on pgflight.costs (run_id);
create index costs_at_idx on pgflight.costs (at);
comment on table pgflight.traces is
  'Flight recorder, one row per block: role user|assistant|system, block_type thinking|text|tool_use|'
  'tool_result|api_error, content: the block as sent to or received from the Messages API, status '
  'completed|in_flight|interrupted (tool results), tokens: estimated tokens of the block (exact usage '
  'per call is in pgflight.costs), attempt_id: the attempt that wrote it.';
comment on table pgflight.costs is
  'One row per model call: tokens (input, output, cache_creation, cache_read), usd (USD = tokens x '
  'model_prices / 1e6), the stop_reason, the transient errors retried before it (retries), and which '
  'agent, step, run and workspace it is billed to.';

alter table pgflight.settings drop column agent_runs_per_partition;

commit;
