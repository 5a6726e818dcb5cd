-- Revert pgflight:internals/_submit_runs_refuse_element
begin;
set local role pgflight_owner;
drop function pgflight._submit_runs_refuse_element(jsonb, bigint);
commit;
