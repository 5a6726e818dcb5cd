-- Revert pgflight:functions/enforce_budgets
begin;
set local role pgflight_owner;
drop function pgflight.enforce_budgets(integer);
commit;
