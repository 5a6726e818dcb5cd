-- Revert pgflight:functions/find_effect: restores the previous definition, deploy/functions/find_effect@v0.9.0.sql (written by scripts/gen_sql_scripts.py)
begin;
set local role pgflight_owner;

-- Look up the receipt of effect p_key of step p_step_id: one row when the effect already
-- happened (by any attempt), none otherwise. A read: any worker of the tree may call it.
create or replace function pgflight.find_effect(p_step_id bigint, p_key text)
returns table (effect_id bigint, result jsonb, attempt_id bigint, recorded_at timestamptz)
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  perform pgflight._require_lane_on_step('reader', p_step_id, 'find_effect');  -- issue 13: tenants
  return query
    select e.id, e.result, e.attempt_id, e.recorded_at
      from pgflight.effects e where e.step_id = p_step_id and e.effect_key = p_key;
end
$$;
comment on function pgflight.find_effect(bigint, text) is
  'The receipt of a step''s effect by key: (effect_id, result, attempt_id, recorded_at), or no row.';
grant execute on function pgflight.find_effect(bigint, text) to pgflight_worker;

commit;
