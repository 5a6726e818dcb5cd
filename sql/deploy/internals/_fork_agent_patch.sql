-- Deploy pgflight:internals/_fork_agent_patch

begin;

set local role pgflight_owner;

-- The patch of a fork, checked: at most settings.max_input_bytes (ZF005) and max_json_depth deep
-- (ZF005), its keys and values by the option spec (scope fork_agent, 22023 naming the key), and
-- each tool_results value a string or an array of content blocks (22023). Returns the normalised
-- patch ({} for NULL).
CREATE OR REPLACE FUNCTION pgflight._fork_agent_patch(p_patch jsonb, p_max_input_bytes bigint) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_size bigint := octet_length(coalesce(p_patch, '{}')::text);
  v_patch jsonb;
  v_results jsonb;
  v_bad text;
begin
  if v_size > p_max_input_bytes then
    raise exception using errcode = 'ZF005', message = 'patch too large',
      detail = format('the patch is %s bytes; settings.max_input_bytes is %s', v_size, p_max_input_bytes),
      hint = 'Patch less (a long tool result can be shortened), or raise settings.max_input_bytes.';
  end if;
  perform pgflight._require_json_depth(p_patch, 'patch');
  v_patch := pgflight._check_options('fork_agent', coalesce(p_patch, '{}'));
  v_results := coalesce(v_patch -> 'tool_results', '{}');
  select v.key into v_bad from jsonb_each(v_results) v
   where jsonb_typeof(v.value) not in ('string', 'array') limit 1;
  if found then
    raise exception using errcode = '22023',
      message = format('patch tool_results.%s must be a string or an array of content blocks', left(v_bad, 256)),
      detail = format('got a JSON %s', jsonb_typeof(v_results -> v_bad)),
      hint = 'e.g. {"tool_results": {"toolu_01": "the result the model should see"}}';
  end if;
  return v_patch;
end
$$;

COMMENT ON FUNCTION pgflight._fork_agent_patch(p_patch jsonb, p_max_input_bytes bigint) IS 'Internal (fork_agent): the patch checked (size and depth ZF005, keys and values 22023) and normalised.';

REVOKE ALL ON FUNCTION pgflight._fork_agent_patch(p_patch jsonb, p_max_input_bytes bigint) FROM PUBLIC;

commit;
