-- Revert pgflight:internals/_raise_budget_exceeded
begin;
set local role pgflight_owner;
drop function pgflight._raise_budget_exceeded(jsonb);
commit;
