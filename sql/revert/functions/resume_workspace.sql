-- Revert pgflight:functions/resume_workspace
begin;
set local role pgflight_owner;
drop function pgflight.resume_workspace(text, text);
commit;
