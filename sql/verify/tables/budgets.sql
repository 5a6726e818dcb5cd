-- Verify pgflight:tables/budgets
select id, scope, workspace_id, run_id, step_id, day, limit_usd, max_wall_s, started_at, spent_usd, reserved_usd, exceeded_at
  from pgflight.budgets where false;
