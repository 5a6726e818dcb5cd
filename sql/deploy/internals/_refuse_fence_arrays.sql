-- Deploy pgflight:internals/_refuse_fence_arrays

begin;

set local role pgflight_owner;

-- The same for the parallel arrays of a batch (heartbeat, complete_batch): called when an element
-- of the attempt ids or tokens is NULL, or an array has more than one dimension (22023 for both).
-- Always raises.
CREATE OR REPLACE FUNCTION pgflight._refuse_fence_arrays(p_operation text, p_attempt_ids bigint[], p_tokens bigint[]) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if array_ndims(p_attempt_ids) > 1 or array_ndims(p_tokens) > 1 then
    raise exception using
      errcode = '22023',
      message = format('%s refused: attempt ids and tokens must be one-dimensional arrays', p_operation),
      detail  = format('%s dimensions of attempt ids, %s of tokens', coalesce(array_ndims(p_attempt_ids), 1),
                       coalesce(array_ndims(p_tokens), 1)),
      hint    = 'Pass one flat array of attempt ids and one of their tokens, in the same order.';
  end if;
  perform pgflight._null_refused(p_operation, format('element %s of the %s',
    coalesce(array_position(p_attempt_ids, null), array_position(p_tokens, null)),
    case when array_position(p_attempt_ids, null) is not null then 'attempt ids' else 'tokens' end));
end
$$;

COMMENT ON FUNCTION pgflight._refuse_fence_arrays(p_operation text, p_attempt_ids bigint[], p_tokens bigint[]) IS 'Internal: raise 22023 for a batch''s attempt ids or tokens with a NULL element or more than one dimension.';

REVOKE ALL ON FUNCTION pgflight._refuse_fence_arrays(p_operation text, p_attempt_ids bigint[], p_tokens bigint[]) FROM PUBLIC;

commit;
