-- Deploy pgflight:functions/spawn_children
begin;
set local role pgflight_owner;

-- Fan-out. A running attempt writes its plan as child steps, p_children a JSON array of
-- {"key": text, "recipe": text, "input": json, "options": {priority, max_attempts, lease_s,
-- max_runtime_s, backoff}}; keys are unique under the parent, and a key that exists already
-- creates nothing (spawning again after a crash is a no-op). In the same transaction the parent
-- attempt goes to awaiting_children and gives up its lease, so its worker slot is free; the last
-- child to end wakes it (see _step_finished). If every child named is already terminal the
-- parent is not parked (parked = false) and reads children_results at once.
-- options: fail_fast (boolean): the first child that ends unsuccessfully fails the parent and
-- cancels its siblings; by default the parent wakes and sees each failure.
-- Locking: the parent's attempt row (fencing check) then its step row (the children counter).
-- Errors: ZF001 lease lost, ZF002 cancelled, ZF003 unknown attempt, 22023 malformed children,
-- ZF005 a child input over settings.max_input_bytes.
create or replace function pgflight.spawn_children(p_attempt_id bigint, p_token bigint, p_children jsonb, p_options jsonb default '{}')
returns table (children_total integer, created integer, parked boolean)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_now timestamptz := pgflight._now();
  v_att pgflight.step_attempts;
  v_parent record;
  v_created integer;
  v_total integer;
  v_bad record;
  v_max_bytes bigint;
begin
  if p_children is null or jsonb_typeof(p_children) <> 'array' then
    raise exception using errcode = '22023', message = 'children must be a JSON array',
      hint = 'e.g. [{"key": "doc-1", "recipe": "review", "input": {...}}]';
  end if;
  v_att := pgflight._lock_held(p_attempt_id, p_token, 'spawn_children');
  select s.max_input_bytes into v_max_bytes from pgflight.settings s;
  select e.ord, e.value into v_bad
    from jsonb_array_elements(p_children) with ordinality as e(value, ord)
   where jsonb_typeof(e.value) <> 'object'
      or jsonb_typeof(e.value -> 'key') is distinct from 'string' or btrim(e.value ->> 'key') = ''
      or jsonb_typeof(e.value -> 'recipe') is distinct from 'string' or btrim(e.value ->> 'recipe') = ''
      or (e.value ? 'options' and jsonb_typeof(e.value -> 'options') <> 'object')
      or pgflight._bad_child_options(e.value -> 'options')
      or octet_length(coalesce(e.value -> 'input', '{}')::text) > v_max_bytes
   limit 1;
  if found then
    if octet_length(coalesce(v_bad.value -> 'input', '{}')::text) > v_max_bytes then
      raise exception using errcode = 'ZF005', message = format('child %s: input too large', v_bad.ord),
        detail = format('the cap is %s bytes', v_max_bytes);
    end if;
    raise exception using errcode = '22023', message = format('child %s is malformed', v_bad.ord),
      detail = left(v_bad.value::text, 200),
      hint = 'Each child needs a non-blank string key and recipe; options must be an object whose '
             'priority is an integer, max_attempts a positive integer, lease_s and max_runtime_s '
             'positive numbers, backoff an object.';
  end if;

  select s.* into v_parent from pgflight.steps s where s.id = v_att.step_id for update;

  with wanted as (
    select e.value ->> 'key' as step_key, e.value ->> 'recipe' as recipe,
           coalesce(e.value -> 'input', '{}') as input, coalesce(e.value -> 'options', '{}') as o
      from jsonb_array_elements(p_children) as e(value)
  ), inserted as (
    insert into pgflight.steps (run_id, parent_id, depth, step_key, recipe, input, priority, max_attempts,
                                backoff, lease_s, max_runtime_s, created_at)
    select v_parent.run_id, v_parent.id, v_parent.depth + 1, w.step_key, w.recipe, w.input,
           coalesce((w.o ->> 'priority')::integer, v_parent.priority),
           coalesce((w.o ->> 'max_attempts')::integer, v_parent.max_attempts),
           coalesce(w.o -> 'backoff', v_parent.backoff),
           coalesce((w.o ->> 'lease_s')::double precision, v_parent.lease_s),
           coalesce((w.o ->> 'max_runtime_s')::double precision, v_parent.max_runtime_s),
           v_now
      from wanted w
    on conflict (parent_id, step_key) where parent_id is not null do nothing
    returning id, run_id, recipe, priority
  ), attempts as (
    insert into pgflight.step_attempts (step_id, run_id, attempt_no, recipe, priority, status, available_after, created_at)
    select i.id, i.run_id, 1, i.recipe, i.priority, 'queued', v_now, v_now from inserted i
    returning id, step_id, run_id
  ), logged as (
    insert into pgflight.events (at, run_id, step_id, attempt_id, from_status, to_status, reason, detail)
    select v_now, a.run_id, a.step_id, a.id, null, 'queued', 'queued', jsonb_build_object('parent_step_id', v_parent.id)
      from attempts a
  )
  select count(*)::integer into v_created from attempts;

  v_total := jsonb_array_length(p_children);
  if v_parent.children_pending + v_created > 0 then
    update pgflight.steps
       set children_pending = children_pending + v_created,
           fail_fast = coalesce((p_options ->> 'fail_fast')::boolean, fail_fast)
     where id = v_parent.id;
    update pgflight.step_attempts set status = 'awaiting_children' where id = p_attempt_id;
    perform pgflight._event(v_att.run_id, v_att.step_id, p_attempt_id, v_att.status, 'awaiting_children',
                            v_att.worker_id, 'children_spawned', null,
                            jsonb_build_object('created', v_created, 'named', v_total,
                                               'pending', v_parent.children_pending + v_created));
    if v_created > 0 then
      perform pgflight._notify_ready();
    end if;
    return query select v_total, v_created, true;
    return;
  end if;
  return query select v_total, v_created, false;
end
$$;
comment on function pgflight.spawn_children(bigint, bigint, jsonb, jsonb) is
  'Fan-out: create child steps (idempotent by key) and park the parent in awaiting_children. '
  'Returns (children_total, created, parked). Errors: ZF001, ZF002, ZF003, ZF005, 22023.';
grant execute on function pgflight.spawn_children(bigint, bigint, jsonb, jsonb) to pgflight_worker;

commit;
