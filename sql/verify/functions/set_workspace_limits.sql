-- Verify pgflight:functions/set_workspace_limits
select 'pgflight.set_workspace_limits(text, jsonb)'::regprocedure;
