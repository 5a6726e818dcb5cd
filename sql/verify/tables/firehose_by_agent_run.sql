-- Verify pgflight:tables/firehose_by_agent_run
select 1 / (c.relkind = 'p')::integer from pg_catalog.pg_class c where c.oid = 'pgflight.traces'::regclass;
select 1 / (c.relkind = 'p')::integer from pg_catalog.pg_class c where c.oid = 'pgflight.costs'::regclass;
select 'pgflight.traces_default'::regclass, 'pgflight.costs_default'::regclass,
       'pgflight.traces_id_seq'::regclass, 'pgflight.costs_id_seq'::regclass;
select agent_runs_per_partition from pgflight.settings where false;
