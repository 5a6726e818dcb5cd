-- Revert pgflight:tables/budgets
begin;
set local role pgflight_owner;
drop table pgflight.budgets;
commit;
