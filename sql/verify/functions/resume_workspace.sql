-- Verify pgflight:functions/resume_workspace
select 'pgflight.resume_workspace(text, text)'::regprocedure;
