-- Deploy pgflight:internals/_submit_runs_refuse_element

begin;

set local role pgflight_owner;

-- What is wrong with a malformed element of submit_runs (found by submit_runs' one pass over the
-- call), raised: the checks in the order of that pass: its shape, recipe, recipe length, keys,
-- options, idempotency key, input size. submit_runs puts "submit_runs element N: " before the
-- message. Always raises (22023, or ZF005 for the input size).
CREATE OR REPLACE FUNCTION pgflight._submit_runs_refuse_element(p_element jsonb, p_max_input_bytes bigint) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if jsonb_typeof(p_element) <> 'object' then
    raise exception using errcode = '22023', message = 'a run must be a JSON object',
      detail = format('got %s', left(p_element::text, 200)),
      hint = 'Each element is {"recipe": ..., "input": ..., "options": {...}}.';
  elsif jsonb_typeof(p_element -> 'recipe') is distinct from 'string' or btrim(p_element ->> 'recipe') = '' then
    raise exception using errcode = '22023', message = 'recipe is required',
      detail = format('got %s', left(coalesce((p_element -> 'recipe')::text, 'no recipe'), 200)),
      hint = 'Pass the name a worker registered with @recipe(...), as a JSON string.';
  elsif length(p_element ->> 'recipe') > 256 then
    raise exception using errcode = '22023', message = 'recipe name is longer than 256 characters',
      detail = format('got %s characters', length(p_element ->> 'recipe')), hint = 'Use a short recipe name.';
  elsif p_element - '{recipe,input,options}'::text[] <> '{}' then
    raise exception using errcode = '22023',
      message = format('unknown key %s in a run', (select k from jsonb_object_keys(p_element - 'recipe' - 'input' - 'options') k
                                                      order by k limit 1)),
      detail = 'known keys: input, options, recipe', hint = 'Check the spelling; options go inside "options".';
  elsif jsonb_typeof(p_element -> 'options') not in ('object', 'null') then
    raise exception using errcode = '22023', message = 'options of submit_run must be a JSON object',
      detail = format('got a JSON %s', jsonb_typeof(p_element -> 'options')),
      hint = 'See docs/options.md for the keys each function takes.';
  elsif jsonb_typeof(p_element -> 'options' -> 'idempotency_key') not in ('string', 'null')
        or length(p_element -> 'options' ->> 'idempotency_key') not between 1 and 512 then
    perform pgflight._bad_option('submit_run', 'idempotency_key', p_element -> 'options' -> 'idempotency_key',
                                 'a JSON string of 1 to 512 characters');
  else
    perform pgflight._require_cap('max_input_bytes', p_max_input_bytes,
                                  octet_length(coalesce(p_element -> 'input', '{}')::text), 'input (bytes)');
  end if;
end
$$;

COMMENT ON FUNCTION pgflight._submit_runs_refuse_element(p_element jsonb, p_max_input_bytes bigint) IS 'Internal (submit_runs): raises what is wrong with a malformed element (22023 naming it, ZF005 input size).';

REVOKE ALL ON FUNCTION pgflight._submit_runs_refuse_element(p_element jsonb, p_max_input_bytes bigint) FROM PUBLIC;

commit;
