-- Verify pgflight:tables/stream_chunks
select 1 / (c.relkind in ('r', 'p', 'S'))::int from pg_catalog.pg_class c where c.oid = 'pgflight.stream_chunks'::regclass;
