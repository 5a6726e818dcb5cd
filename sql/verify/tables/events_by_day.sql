-- Verify pgflight:tables/events_by_day
select 1 / (c.relkind = 'p')::integer from pg_catalog.pg_class c where c.oid = 'pgflight.events'::regclass;
select 'pgflight.events_default'::regclass, 'pgflight.events_id_seq'::regclass;
select events_keep_s, partitions_ahead_days from pgflight.settings where false;
