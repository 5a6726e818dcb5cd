-- Verify pgflight:functions/enforce_budgets
select 'pgflight.enforce_budgets(integer)'::regprocedure;
