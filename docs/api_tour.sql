-- A runnable tour of the SQL API: psql -X -f docs/api_tour.sql "$PGFLIGHT_DSN"
-- Each call is what a worker or operator in any language sends. Run it on a scratch database
-- where pgflight is deployed and no worker runs (a worker would claim the tour's steps).
\pset footer off
\set ON_ERROR_STOP 1
\echo '-- operator: a workspace and a run (idempotent by key)'
select pgflight.create_workspace('demo', '{"daily_usd_cap": 25}') as workspace_id;
select * from pgflight.submit_run('demo', 'review', '{"doc": "GPL-3"}', '{"idempotency_key": "gpl3", "max_attempts": 3}') \gset r1_
select :r1_run_id as run_id, :r1_step_id as step_id, :r1_attempt_id as attempt_id, :'r1_created' as created;
select * from pgflight.submit_run('demo', 'review', '{"doc": "GPL-3"}', '{"idempotency_key": "gpl3"}');
\echo '-- worker: register, claim a batch (lease 30 s), start, heartbeat'
select pgflight.register_worker('host-a:4242', '{"recipes": ["review"]}') as worker_id \gset
select attempt_id, fencing_token, step_id, recipe, input from pgflight.claim_batch(:worker_id, 10, 30, array['review']);
select attempt_id, fencing_token as token from pgflight.attempts where status = 'claimed' \gset
select attempt_id, started_at is not null as started from pgflight.start_step(:attempt_id, :token);
select attempt_id, status from pgflight.heartbeat(:worker_id, array[:attempt_id]::bigint[], array[:token]::bigint[]);
\echo '-- worker: fan out two children and park; they run; the parent wakes'
select * from pgflight.spawn_children(:attempt_id, :token, '[{"key": "clause-1", "recipe": "check"}, {"key": "clause-2", "recipe": "check"}]');
select array_agg(attempt_id order by attempt_id) as ids, array_agg(fencing_token order by attempt_id) as toks
  from pgflight.claim_batch(:worker_id, 10, 30, array['check']) \gset
select * from pgflight.complete_batch(:'ids', :'toks', array['{"risk": "low"}', '{"risk": "high"}']::jsonb[]);
select step_key, status, result from pgflight.children_results((select step_id from pgflight.attempts where attempt_id = :attempt_id));
\echo '-- worker: the woken parent is claimed again (new token) and completes; the old token is refused'
select attempt_id, fencing_token as token2 from pgflight.claim_batch(:worker_id, 1, 30) \gset
select * from pgflight.complete_step(:attempt_id, :token2, '{"report": "2 clauses checked"}');
\set ON_ERROR_STOP 0
select * from pgflight.complete_step(:attempt_id, :token, '{"late": true}');
\set ON_ERROR_STOP 1
select pgflight.record_stale_write(:attempt_id, :token, 'complete_step') as logged;
select run_id, status, steps_total, steps_succeeded, attempts_total, result from pgflight.run_status(:r1_run_id);
\echo '-- failures: retry with backoff, then the dead letter at the ceiling, then retry_step'
select run_id as r2 from pgflight.submit_run('demo', 'flaky', '{}', '{"max_attempts": 2, "backoff": {"base_s": 0}}') \gset
select attempt_id as a, fencing_token as t from pgflight.claim_batch(:worker_id, 1, 30, array['flaky']) \gset
select outcome, next_attempt_id is not null as retried from pgflight.fail_step(:a, :t, '{"message": "HTTP 503"}');
select attempt_id as a, fencing_token as t from pgflight.claim_batch(:worker_id, 1, 30, array['flaky']) \gset
select outcome from pgflight.fail_step(:a, :t, '{"message": "HTTP 503 again"}');
select step_id, attempt_no, failed_attempts, reason, error from pgflight.dead_letters;
select pgflight.retry_step((select step_id from pgflight.dead_letters), 'alice', 'upstream fixed') is not null as retried;
\echo '-- operator: gates, cancel, replay, sweeps'
select run_id as r3, step_id as s3 from pgflight.submit_run('demo', 'publish', '{}') \gset
select * from pgflight.approve(:s3, 'approve', 'alice', 'looks right');
select attempt_id as a, fencing_token as t from pgflight.claim_batch(:worker_id, 1, 30, array['publish']) \gset
select * from pgflight.request_approval(:a, :t, 'approval', '{"summary": "publish the report"}');
select * from pgflight.release_step(:a, :t, 'shutting down');
select * from pgflight.cancel_run(:r2, 'alice', 'no longer needed');
select pgflight.replay_from(:r1_step_id, 'alice', 'new clause list') is not null as replayed;
select * from pgflight.run_sweeps();
select * from pgflight.engine_health;
select reason, count(*) from pgflight.run_events group by reason order by reason;
