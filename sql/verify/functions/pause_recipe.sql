-- Verify pgflight:functions/pause_recipe
select 'pgflight.pause_recipe(text, text)'::regprocedure;
