-- Verify pgflight:sequences/claim_turns
select 1 / (c.relkind in ('r', 'p', 'S'))::int from pg_catalog.pg_class c where c.oid = 'pgflight.claim_turns'::regclass;
