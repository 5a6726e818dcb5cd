-- Verify pgflight:tables/runs_idempotency_partial
select 1 / (case when to_regclass('pgflight.idempotency_key_is_unique_per_workspace_idx') is not null then 1 else 0 end);
select 1 / (case when not exists (select from pg_constraint
                                   where conname = 'idempotency_key_is_unique_per_workspace'
                                     and conrelid = 'pgflight.runs'::regclass) then 1 else 0 end);
