-- Deploy pgflight:functions/complete_and_claim
begin;
set local role pgflight_owner;

-- A worker's batch of completions and the claim of the slots they free, in one call: claim_batch
-- then complete_batch, in one transaction (issue 18: one round trip and one commit per batch
-- instead of two each). It is what a worker sends while a backlog lasts; either part alone is
-- still claim_batch or complete_batch. Before, the worker sent the same two calls as one CTE,
-- which the server parsed and planned at every call (0.17 ms a call, 0.021 ms per job); a
-- PL/pgSQL function keeps its two statements' plans for the session, so nothing is planned per
-- call and nothing needs a prepared statement (PgBouncer in transaction mode, C31).
-- Arguments: the worker and the claim as claim_batch's (p_batch_size steps at most, lease in
-- seconds, p_recipes null: any, p_options claim_batch's: start), then complete_batch's parallel
-- arrays (attempt ids ascending, their tokens, their results; empty arrays: nothing to complete).
-- Returns first one row per claimed step (claim_batch's columns, in claim order; outcome null),
-- then one row per attempt given, in the order given (attempt_id and outcome: succeeded |
-- lease_lost | cancelled | result_refused, as complete_batch's; the claim's other columns null).
-- Atomic: when either part raises, nothing of the other is kept.
-- Locking: the claim first (the caller's workers row, then the ready attempts FOR UPDATE SKIP
-- LOCKED), then the completion's held attempts in id order: the worker row before attempts, the
-- global order (docs/locking.md) and the one heartbeat takes. The attempts claimed here are
-- queued ones, those completed here held ones: the two sets never meet.
-- Trust: SECURITY DEFINER like its two parts, which check the caller themselves (session_user:
-- the worker must be the login's, ZF010; an attempt of another login, even with its current
-- token, is lease_lost for its row alone), so calling them from here grants nothing they would not.
-- Errors: claim_batch's (22023 bad batch size or lease, ZF005 over settings.max_batch_size /
-- max_lease_s, ZF010 unknown or stopped worker or one of another login) and complete_batch's
-- (22023 arrays of different lengths, a NULL element).
create or replace function pgflight.complete_and_claim(
  p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[],
  p_batch_size integer, p_lease_s double precision, p_recipes text[] default null,
  p_options jsonb default '{}')
returns table (attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint,
               step_key text, attempt_no integer, recipe text, input jsonb,
               lease_expires_at timestamptz, deadline_at timestamptz, outcome text)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  -- the claim first: the worker row, then attempt rows (the lock order above)
  return query
    select c.attempt_id, c.fencing_token, c.step_id, c.run_id, c.parent_id, c.step_key, c.attempt_no,
           c.recipe, c.input, c.lease_expires_at, c.deadline_at, null::text
      from pgflight.claim_batch(p_worker_id, p_batch_size, p_lease_s, p_recipes, p_options) c;
  return query
    select d.attempt_id, null::bigint, null::bigint, null::bigint, null::bigint, null::text, null::integer,
           null::text, null::jsonb, null::timestamptz, null::timestamptz, d.outcome
      from pgflight.complete_batch(p_attempt_ids, p_tokens, p_results) d;
end
$$;
comment on function pgflight.complete_and_claim(bigint, bigint[], bigint[], jsonb[], integer, double precision, text[], jsonb) is
  'claim_batch then complete_batch in one transaction: the claimed steps (outcome null), then one '
  'outcome per attempt given (succeeded | lease_lost | cancelled | result_refused). Errors: those of '
  'claim_batch (22023, ZF005, ZF010) and complete_batch (22023).';
grant execute on function pgflight.complete_and_claim(bigint, bigint[], bigint[], jsonb[], integer, double precision, text[], jsonb) to pgflight_worker;

commit;
