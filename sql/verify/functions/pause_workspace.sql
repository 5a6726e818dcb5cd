-- Verify pgflight:functions/pause_workspace
select 'pgflight.pause_workspace(text, text)'::regprocedure;
