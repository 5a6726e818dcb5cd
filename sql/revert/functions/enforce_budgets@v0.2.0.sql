-- Revert pgflight:functions/enforce_budgets@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.enforce_budgets(integer);
commit;
