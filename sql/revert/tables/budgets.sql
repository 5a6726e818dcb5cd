-- Revert pgflight:tables/budgets
begin;
drop table pgflight.budgets;
commit;
