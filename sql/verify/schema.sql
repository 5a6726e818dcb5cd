-- Verify pgflight:schema
select pg_catalog.has_schema_privilege('pgflight', 'usage');
