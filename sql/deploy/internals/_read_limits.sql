-- Deploy pgflight:internals/_read_limits
-- Defines: _require_limit().
-- The bound every paged read function puts on its row count. Granted to no role.
begin;
set local role pgflight_owner;

-- Raise 22023 unless p_value is between 1 and p_max; p_name names the argument in the message.
create or replace function pgflight._require_limit(p_name text, p_value integer, p_max integer)
returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
  if p_value is null or p_value < 1 or p_value > p_max then
    raise exception using errcode = '22023', message = format('%s must be between 1 and %s', p_name, p_max),
      detail = format('got %s', coalesce(p_value::text, 'null')),
      hint = 'Page with the keyset argument instead of a larger limit.';
  end if;
end
$$;
comment on function pgflight._require_limit(text, integer, integer) is
  'Internal: 22023 unless a read''s row limit is between 1 and p_max.';

commit;
