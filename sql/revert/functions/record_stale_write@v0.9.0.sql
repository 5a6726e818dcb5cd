-- Revert pgflight:functions/record_stale_write@v0.9.0: restores the previous definition, deploy/functions/record_stale_write@v0.2.0.sql (written by scripts/gen_sql_scripts.py)
begin;
set local role pgflight_owner;

-- A write raised ZF001 or ZF002 and so changed nothing, not even the log: a worker calls this
-- afterwards, in its own transaction, so the refusal is on record (C02). Returns true when the
-- event was written; false when the token is in fact current (nothing to record).
create or replace function pgflight.record_stale_write(p_attempt_id bigint, p_token bigint, p_operation text)
returns boolean
language sql volatile security definer
set search_path = ''
as $$ select pgflight._record_stale(p_attempt_id, p_token, coalesce(p_operation, 'unknown')) $$;
comment on function pgflight.record_stale_write(bigint, bigint, text) is
  'Log a refused (stale) worker write as a stale_result_rejected event; true when logged.';
grant execute on function pgflight.record_stale_write(bigint, bigint, text) to pgflight_worker;

commit;
