-- Deploy pgflight:functions/expire_waits
begin;
set local role pgflight_owner;

-- Sweep (run_sweeps, each pass): resolve up to p_limit pending waits whose due_at has passed (a
-- timer: 'elapsed'; an event wait: 'timed_out' with its default payload) and requeue the steps
-- parked on them; then delete up to p_limit emitted events past their retention and up to p_limit
-- event channel rows that no pending wait and no kept event names (untouched for the retention).
-- Bounded like expire_approvals: rows taken FOR UPDATE SKIP LOCKED (a wait an emit or a worker
-- holds is left to the next pass), each wait in a subtransaction of its own (one that raises is
-- skipped with a WARNING naming it). Returns the waits resolved plus the events deleted.
-- Errors: 22023 a negative limit; ZF012 a login that is not an operator of every workspace.
create or replace function pgflight.expire_waits(p_limit integer default 1000)
returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := pgflight._now();
  v_row record;
  v_count integer := 0;
  v_deleted integer;
begin
  perform pgflight._require_lane('operator', null, 'expire_waits');  -- acts on every workspace
  perform pgflight._check_limit(p_limit);
  for v_row in
    select w.id, w.kind, w.default_payload from pgflight.waits w
     where w.outcome is null and w.due_at <= v_now
     order by w.due_at limit p_limit
       for update skip locked
  loop
    begin
      perform pgflight._resolve_wait(v_row.id, case v_row.kind when 'timer' then 'elapsed' else 'timed_out' end,
                                     case when v_row.kind = 'event' then v_row.default_payload end, null,
                                     'expire_waits');
      v_count := v_count + 1;
    exception when others then
      raise warning 'pgflight: expire_waits skipped wait %: % (SQLSTATE %)', v_row.id, sqlerrm, sqlstate
        using hint = 'The next pass tries it again; the other waits of this pass were resolved.';
    end;
  end loop;
  delete from pgflight.emitted_events e
   where e.id in (select x.id from pgflight.emitted_events x where x.expires_at <= v_now
                   order by x.expires_at limit p_limit for update skip locked);
  get diagnostics v_deleted = row_count;
  delete from pgflight.event_channels c
   where (c.workspace_id, c.name, c.key) in (
     select x.workspace_id, x.name, x.key from pgflight.event_channels x
      where x.touched_at <= v_now - make_interval(secs => (select s.event_retention_s from pgflight.settings s))
        and not exists (select from pgflight.waits w
                         where w.workspace_id = x.workspace_id and w.event_name = x.name and w.event_key = x.key
                           and w.kind = 'event' and w.outcome is null)
        and not exists (select from pgflight.emitted_events e
                         where e.workspace_id = x.workspace_id and e.name = x.name and e.key = x.key)
      order by x.touched_at limit p_limit
        for update skip locked);
  return v_count + v_deleted;
end
$$;
comment on function pgflight.expire_waits(integer) is
  'Sweep: resolve due timers (elapsed) and timed-out event waits (default payload), requeue their steps; '
  'delete emitted events past their retention and unused channel rows; returns waits resolved + events deleted.';
grant execute on function pgflight.expire_waits(integer) to pgflight_operator;

commit;
