-- Deploy pgflight:internals/_option_spec

begin;

set local role pgflight_owner;

-- Every option of every API function: its scope (the function; "step" is the step options that
-- submit_run takes and every child of spawn_children takes; "backoff" the keys of the backoff
-- object), kind (boolean, integer, number, string, timestamptz, string[], backoff, enum, json: any
-- JSON value, its size and depth checked by the function that takes it), the
-- inclusive bounds (for a string or string[]: its length in characters / items), the default and
-- one line of documentation. scripts/gen_options_doc writes docs/options.md from this, and
-- _check_options validates against it: a key absent here is refused.
CREATE OR REPLACE FUNCTION pgflight._option_spec() RETURNS TABLE(scope text, key text, kind text, min_value numeric, max_value numeric, choices text[], default_value text, doc text)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  values
    ('step', 'priority', 'integer', -2147483648, 2147483647, null::text[], '0 (a child: its parent''s)',
     'Higher is claimed first.'),
    ('step', 'max_attempts', 'integer', 1, 100000, null, 'settings.default_max_attempts (a child: its parent''s)',
     'Attempts before the dead letter; every failure, lapse and timeout counts.'),
    ('step', 'lease_s', 'number', 0.001, 604800, null, 'claim_batch''s p_lease_s (a child: its parent''s)',
     'Seconds of lease per claim and per heartbeat.'),
    ('step', 'max_runtime_s', 'number', 0.001, 31536000, null, 'none (a child: its parent''s)',
     'Seconds an attempt may run from its claim before the deadline sweep times it out.'),
    ('step', 'backoff', 'backoff', null, null, null, '{"base_s": 1, "factor": 2, "max_s": 300, "jitter": 0.2}',
     'Retry delay min(max_s, base_s * factor^(n-1)) * (1 +/- jitter), n the failures so far.'),
    ('step', 'concurrency_key', 'string', 1, 200, null, 'none (a child: its own, never inherited)',
     'At most concurrency_limit attempts of the workspace''s steps with this key are leased at once.'),
    ('step', 'concurrency_limit', 'integer', 1, 1000000, null, '1', 'The limit of concurrency_key; needs concurrency_key.'),
    ('backoff', 'base_s', 'number', 0, 86400, null, '1', 'First retry delay in seconds.'),
    ('backoff', 'factor', 'number', 1, 100, null, '2', 'Growth per failure.'),
    ('backoff', 'max_s', 'number', 0, 2592000, null, '300', 'Cap of the delay in seconds; reached, it stays there.'),
    ('backoff', 'jitter', 'number', 0, 1, null, '0.2', 'Random spread: 0.2 is plus or minus 20 %.'),
    ('submit_run', 'idempotency_key', 'string', 1, 512, null, 'none',
     'Same key in the workspace: the same run (ZF004 with another input).'),
    ('submit_run', 'not_before', 'timestamptz', null, null, null, 'now',
     'The root step is not claimable before this time (ISO 8601 with a UTC offset, required); excludes delay_s.'),
    ('submit_run', 'delay_s', 'number', 0, 1000000000, null, '0',
     'The root step is claimable this many seconds from now, on the server''s clock; excludes not_before.'),
    ('submit_run', 'max_usd', 'number', 0, 1000000000, null, 'the workspace''s max_run_usd',
     'USD budget of the whole run tree.'),
    ('submit_run', 'max_wall_s', 'number', 0.001, 31536000, null, 'none', 'Wall-time budget of the run tree in seconds.'),
    ('submit_run', 'max_iterations', 'integer', 1, 1000000, null, '25 per agent', 'Model calls per agent in the run.'),
    ('submit_run', 'max_tool_calls', 'integer', 0, 1000000, null, '50 per agent', 'Tool calls per agent in the run.'),
    ('submit_run', 'submitted_by', 'string', 1, 256, null, 'session_user', 'Who submitted, for the events log.'),
    ('submit_run', 'traceparent', 'string', 1, 128, null, 'none',
     'W3C trace context the run joins (kept in its options; read back by run_trace_context).'),
    ('spawn_children', 'fail_fast', 'boolean', null, null, null, 'false',
     'The first child that ends unsuccessfully fails the parent and cancels its siblings.'),
    ('fail_step', 'retryable', 'boolean', null, null, null, 'true', 'false: the dead letter at once.'),
    ('fail_step', 'retry_after_s', 'number', 0, 2592000, null, 'the step''s backoff',
     'Seconds before the retry; replaces the backoff and still spends an attempt.'),
    ('release_step', 'retry_after_s', 'number', 0, 2592000, null, '0',
     'Seconds before the released step may be claimed again (a rate limit''s Retry-After); no attempt spent.'),
    ('claim_batch', 'start', 'boolean', null, null, null, 'false',
     'Claimed attempts go straight to running (saves start_step).'),
    ('register_worker', 'hostname', 'string', 0, 256, null, 'none', 'Host of the worker process.'),
    ('register_worker', 'pid', 'integer', 0, 2147483647, null, 'none', 'Process id of the worker.'),
    ('register_worker', 'recipes', 'string[]', 0, 10000, null, 'none', 'Recipe names the worker serves (each at most 256 characters).'),
    ('create_workspace', 'daily_usd_cap', 'number', 0, 1000000000, null, 'none', 'USD per UTC day across the workspace.'),
    ('create_workspace', 'max_run_usd', 'number', 0, 1000000000, null, 'none', 'Default USD budget of each run.'),
    ('request_approval', 'expires_in_s', 'number', 0.001, 31536000, null, 'never',
     'Seconds until the default decision applies.'),
    ('request_approval', 'default_decision', 'enum', null, null, array['approve', 'reject'], 'reject',
     'The decision expire_approvals applies at expiry.'),
    ('begin_agent_run', 'model', 'string', 1, 256, null, 'required on the first call', 'The model the agent calls.'),
    ('begin_agent_run', 'system', 'string', 0, 16777216, null, '''''', 'The system prompt.'),
    ('begin_agent_run', 'task', 'string', 0, 16777216, null, '''''', 'The first user message (iteration 0).'),
    ('begin_agent_run', 'max_iterations', 'integer', 1, 1000000, null, 'the run''s, else 25', 'Model calls allowed.'),
    ('begin_agent_run', 'max_tool_calls', 'integer', 0, 1000000, null, 'the run''s, else 50', 'Tool calls allowed.'),
    ('begin_agent_run', 'max_usd', 'number', 0, 1000000000, null, 'none',
     'USD budget of this agent and every descendant.'),
    ('begin_agent_run', 'max_wall_s', 'number', 0.001, 31536000, null, 'none',
     'Wall-time budget in seconds of this agent''s tree.'),
    ('record_model_call', 'stop_reason', 'string', 0, 256, null, 'none', 'The response''s stop_reason.'),
    ('record_model_call', 'retries', 'integer', 0, 1000000, null, '0', 'Transient errors retried before this answer.'),
    ('record_model_call', 'mark_tools', 'boolean', null, null, null, 'false',
     'Also mark the response''s tool calls in flight.'),
    ('record_orphan_cost', 'stop_reason', 'string', 0, 256, null, 'none', 'The response''s stop_reason.'),
    ('record_orphan_cost', 'retries', 'integer', 0, 1000000, null, '0', 'Transient errors retried before this answer.'),
    ('record_orphan_cost', 'why', 'string', 0, 1000, null, 'none', 'Why record_model_call refused it (kept in the budget log).'),
    ('record_trace', 'seq', 'integer', 0, 2147483647, null, 'next free >= 2000', 'Position in the iteration.'),
    ('record_trace', 'tool_use_id', 'string', 0, 256, null, 'none', 'The tool call this block belongs to.'),
    ('record_trace', 'tool_name', 'string', 0, 256, null, 'none', 'The tool''s name.'),
    ('record_trace', 'status', 'string', 1, 64, null, 'completed', 'The block''s status.'),
    ('record_trace', 'tokens', 'integer', 0, 2147483647, null, 'length / 4', 'Token estimate of the block.'),
    ('wait_event', 'timeout_s', 'number', 0, 3153600000, null, 'none: it waits until an event comes',
     'Seconds from the first call with this wait key until the wait times out and returns default.'),
    ('wait_event', 'default', 'json', null, null, null, 'null',
     'The JSON payload a timed-out wait returns (at most settings.max_event_payload_bytes, nested at most settings.max_json_depth).'),
    ('emit_event', 'event_id', 'string', 1, 200, null, 'a random uuid',
     'Idempotency key in the workspace: the same id again records nothing and wakes nothing (kept settings.event_retention_s).'),
    -- fork_agent's patch: what the fork changes from iteration k on (the step input keys of the agent recipe)
    ('fork_agent', 'system', 'string', 0, 16777216, null, 'the original''s', 'The system prompt from iteration k on.'),
    ('fork_agent', 'model', 'string', 1, 256, null, 'the original''s', 'The model asked from iteration k on.'),
    ('fork_agent', 'provider', 'string', 1, 256, null, 'the original''s', 'The model provider (anthropic, openai, offline, ...).'),
    ('fork_agent', 'tools', 'string[]', 0, 1000, null, 'the original''s', 'The tool names the fork offers the model.'),
    ('fork_agent', 'max_tokens', 'integer', 1, 1000000, null, 'the original''s', 'max_tokens of each model call.'),
    ('fork_agent', 'max_iterations', 'integer', 1, 1000000, null, 'the original''s',
     'Model calls allowed, the k-1 reused iterations included.'),
    ('fork_agent', 'max_tool_calls', 'integer', 0, 1000000, null, 'the original''s',
     'Tool calls allowed, the reused iterations'' calls included.'),
    ('fork_agent', 'max_usd', 'number', 0, 1000000000, null, 'the original agent''s max_usd',
     'USD budget of the fork and its sub-agents (its own budget; the reused iterations cost 0).'),
    ('fork_agent', 'max_wall_s', 'number', 0.001, 31536000, null, 'the original agent''s max_wall_s',
     'Wall-time budget in seconds of the fork''s tree, from the fork.'),
    ('fork_agent', 'tool_results', 'object', 0, 1000, null, 'none',
     'Results that replace those of iteration k-1''s tool calls: tool_use id -> a string or an array of content blocks.')
$$;

COMMENT ON FUNCTION pgflight._option_spec() IS 'Internal: the catalogue of every API option (scope, key, kind, bounds, default, doc); the single source of _check_options and docs/options.md.';

REVOKE ALL ON FUNCTION pgflight._option_spec() FROM PUBLIC;

commit;
