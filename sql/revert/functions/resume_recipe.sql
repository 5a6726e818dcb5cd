-- Revert pgflight:functions/resume_recipe
begin;
set local role pgflight_owner;
drop function pgflight.resume_recipe(text, text);
commit;
