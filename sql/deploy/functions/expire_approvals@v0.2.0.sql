-- Deploy pgflight:functions/expire_approvals
begin;
set local role pgflight_owner;

-- Sweep: apply the default decision to gates past their expires_at. Bounded by p_limit.
create or replace function pgflight.expire_approvals(p_limit integer default 1000)
returns integer
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_row record;
  v_count integer := 0;
begin
  for v_row in
    select g.id, g.default_decision from pgflight.approvals g
     where g.decision is null and g.expires_at < (select pgflight._now())
     order by g.expires_at limit p_limit
       for update skip locked
  loop
    perform pgflight._decide(v_row.id, v_row.default_decision, 'expire_approvals', 'expired', 'approval_expired');
    v_count := v_count + 1;
  end loop;
  return v_count;
end
$$;
comment on function pgflight.expire_approvals(integer) is
  'Sweep: apply default decisions to expired gates; returns how many.';
grant execute on function pgflight.expire_approvals(integer) to pgflight_operator;

commit;
