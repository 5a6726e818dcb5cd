-- Revert pgflight:functions/enforce_budgets
begin;
drop function pgflight.enforce_budgets(integer);
commit;
