-- Verify pgflight:functions/resume_recipe
select 'pgflight.resume_recipe(text, text)'::regprocedure;
