-- Verify pgflight:functions/create_workspace
select 'pgflight.create_workspace(text, jsonb)'::regprocedure;
