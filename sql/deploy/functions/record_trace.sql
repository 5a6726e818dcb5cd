-- Deploy pgflight:functions/record_trace

begin;

set local role pgflight_owner;

-- Store one trace block that is not a model response: a transient API error met while making
-- iteration p_iteration's call (block_type api_error, role system), or any other block a client
-- wants on the record. A repeated write with the same seq is a no-op (created = false).
-- options: seq (default: the next free seq in the system band, >= _seq_band_system(), 2000, in the
-- iteration), tool_use_id, tool_name,
-- status (default completed), tokens.
-- A new block is refused once the iteration holds settings.max_trace_blocks_per_iteration blocks
-- (ZF005 naming it; a repeated seq is still a no-op): one worker cannot grow an agent run's trace
-- without bound. The count reads at most the cap's blocks of the iteration (block_is_unique's
-- index); the agent run row is locked by the fence, so two writers of one run take turns.
-- Errors: ZF001, ZF002, ZF003 (fence), ZF005 (a cap), 22023 (constraint violations of role,
-- block_type, status).
CREATE OR REPLACE FUNCTION pgflight.record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_role text, p_block_type text, p_content jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(trace_id bigint, seq integer, created boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_seq integer;
  v_id bigint;
  v_cap integer;
  v_blocks integer;
begin
  -- a trace block is capped like a result (ZF005, nothing written)
  perform pgflight._require_cap('max_result_bytes', (select s.max_result_bytes from pgflight.settings s),
                                octet_length(p_content::text), 'trace block (bytes)');
  perform pgflight._require_json_depth(p_content, 'trace block');
  -- every option checked against its spec first (docs/options.md): 22023 naming the key
  p_options := pgflight._check_options('record_trace', p_options);
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'record_trace');
  v_seq := pgflight._opt_num(p_options, 'seq', null)::integer;
  if v_seq is null then
    select greatest(coalesce(max(t.seq) + 1, pgflight._seq_band_system()), pgflight._seq_band_system())
      into v_seq from pgflight.traces t
     where t.agent_run_id = v_run.id and t.iteration = p_iteration and t.seq >= pgflight._seq_band_system();
  end if;
  -- the iteration's blocks, at most the cap of them (a block already at this seq: a no-op below)
  select s.max_trace_blocks_per_iteration into v_cap from pgflight.settings s;
  select count(*)::integer into v_blocks
    from (select from pgflight.traces t where t.agent_run_id = v_run.id and t.iteration = p_iteration
           limit v_cap) x;
  if v_blocks >= v_cap and not exists (select from pgflight.traces t where t.agent_run_id = v_run.id
                                          and t.iteration = p_iteration and t.seq = v_seq) then
    raise exception using
      errcode = 'ZF005',
      message = 'trace block over the cap settings.max_trace_blocks_per_iteration',
      detail  = format('agent run %s iteration %s holds %s blocks; settings.max_trace_blocks_per_iteration is %s',
                       v_run.id, p_iteration, v_blocks, v_cap),
      hint    = 'Record fewer blocks per iteration (one block can carry a list), or raise the cap: '
                'UPDATE pgflight.settings SET max_trace_blocks_per_iteration = ...';
  end if;
  begin
    insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content,
                                 status, tokens, attempt_id, created_at, updated_at)
    values (v_run.id, p_iteration, v_seq, p_role, p_block_type, pgflight._opt_text(p_options, 'tool_use_id', null),
            pgflight._opt_text(p_options, 'tool_name', null), p_content,
            pgflight._opt_text(p_options, 'status', 'completed'),
            coalesce(pgflight._opt_num(p_options, 'tokens', null)::integer, ceil(length(coalesce(p_content::text, '')) / 4.0)::integer),
            p_attempt_id, v_now, v_now)
    on conflict on constraint block_is_unique do nothing
    returning id into v_id;
  exception when check_violation or not_null_violation then
    raise exception using errcode = '22023', message = 'malformed trace block', detail = sqlerrm,
      hint = 'role: user|assistant|system; block_type: thinking|text|tool_use|tool_result|api_error; '
             'status: completed|in_flight|interrupted; tool blocks need tool_use_id.';
  end;
  if v_id is null then
    return query select t.id, t.seq, false from pgflight.traces t
     where t.agent_run_id = v_run.id and t.iteration = p_iteration and t.seq = v_seq;
    return;
  end if;
  return query select v_id, v_seq, true;
end
$$;

COMMENT ON FUNCTION pgflight.record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_role text, p_block_type text, p_content jsonb, p_options jsonb) IS 'Store one trace block (e.g. a transient API error); idempotent by seq. Options (docs/options.md): seq, tool_use_id, tool_name, status, tokens. At most settings.max_trace_blocks_per_iteration blocks an iteration. Errors: ZF001, ZF002, ZF003, ZF005, 22023.';

REVOKE ALL ON FUNCTION pgflight.record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_role text, p_block_type text, p_content jsonb, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_role text, p_block_type text, p_content jsonb, p_options jsonb) TO pgflight_worker;

commit;
