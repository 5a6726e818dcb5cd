-- Revert pgflight:internals/_model_call_options_ok
begin;
set local role pgflight_owner;
drop function pgflight._model_call_options_ok(jsonb);
commit;
