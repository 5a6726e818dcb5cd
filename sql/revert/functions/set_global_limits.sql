-- Revert pgflight:functions/set_global_limits: restores the previous definition, deploy/functions/set_global_limits@v0.3.0.sql (written by scripts/gen_sql_scripts.py)
begin;
set local role pgflight_owner;

-- Set the engine-wide in-flight cap. options: max_in_flight (leased attempts across all
-- workspaces, 0 .. 1e6; null removes it). While a global cap is set, claims take turns on one
-- lock. Returns the cap now in force. Errors: 22023 unknown option or out of range.
create or replace function pgflight.set_global_limits(p_options jsonb)
returns table (max_in_flight integer)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  perform pgflight._require_lane('operator', null, 'set_global_limits');  -- issue 13: acts on every workspace
  perform pgflight._require_known_keys(p_options, array['max_in_flight']);
  if p_options ? 'max_in_flight' then
    update pgflight.settings s set max_in_flight = pgflight._limit_option(p_options, 'max_in_flight', 0, 1e6, true)::integer;
  end if;
  return query select s.max_in_flight from pgflight.settings s;
end
$$;
comment on function pgflight.set_global_limits(jsonb) is 'Set the global max_in_flight (null removes). Errors: 22023.';
revoke execute on function pgflight.set_global_limits(jsonb) from public;
grant execute on function pgflight.set_global_limits(jsonb) to pgflight_operator;

commit;
