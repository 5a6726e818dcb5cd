-- Deploy pgflight:functions/spawn_children
-- requires: functions/_lifecycle
begin;
set local role pgflight_owner;

-- True when a child's options are malformed: priority not an integer, max_attempts not a
-- positive integer, lease_s or max_runtime_s not a positive number, backoff not an object.
create function pgflight._bad_child_options(p_options jsonb)
returns boolean
language plpgsql immutable
set search_path = ''
as $$
declare
  v_key text;
  v_num numeric;
begin
  if p_options is null or jsonb_typeof(p_options) <> 'object' then
    return false;  -- a non-object is reported by the caller's own check
  end if;
  if p_options ? 'backoff' and jsonb_typeof(p_options -> 'backoff') <> 'object' then
    return true;
  end if;
  foreach v_key in array array['priority', 'max_attempts', 'lease_s', 'max_runtime_s'] loop
    continue when not p_options ? v_key;
    if jsonb_typeof(p_options -> v_key) <> 'number' then
      return true;
    end if;
    v_num := (p_options ->> v_key)::numeric;
    if (v_key in ('priority', 'max_attempts') and v_num <> trunc(v_num))
       or (v_key = 'max_attempts' and v_num < 1)
       or (v_key in ('lease_s', 'max_runtime_s') and v_num <= 0) then
      return true;
    end if;
  end loop;
  return false;
end
$$;
comment on function pgflight._bad_child_options(jsonb) is
  'Internal: true when a child''s options object has a malformed priority, max_attempts, lease_s, max_runtime_s or backoff.';

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
create function pgflight.spawn_children(p_attempt_id bigint, p_token bigint, p_children jsonb, p_options jsonb default '{}')
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

-- The children of a step in key order, each with its current status, result and last error, for
-- a woken parent to read. Any caller may read: results are not secret from the tree's worker.
create function pgflight.children_results(p_step_id bigint)
returns table (step_key text, step_id bigint, recipe text, status text, attempt_no integer,
               result jsonb, error jsonb)
language sql stable security definer
set search_path = ''
as $$
  select s.step_key, s.id, s.recipe, a.status, a.attempt_no, a.result, a.error
    from pgflight.steps s
    join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
   where s.parent_id = p_step_id
   order by s.step_key
$$;
comment on function pgflight.children_results(bigint) is
  'Children of a step in key order with status, result and error of their latest attempt.';
grant execute on function pgflight.children_results(bigint) to pgflight_worker, pgflight_operator, pgflight_reader;

-- Sweep: wake parked parents whose children are all terminal but who were not woken (a lost
-- poke). The children counter is the truth, so the check is O(1) per parent. Bounded by p_limit.
create function pgflight.wake_parents(p_limit integer default 1000)
returns integer
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_row record;
  v_count integer := 0;
begin
  for v_row in
    select a.step_id from pgflight.step_attempts a
      join pgflight.steps s on s.id = a.step_id
     where a.status = 'awaiting_children' and s.children_pending <= 0
     limit p_limit
       for update of a skip locked
  loop
    if pgflight._wake(v_row.step_id, 'parent_resumed', 'wake_parents') then
      v_count := v_count + 1;
    end if;
  end loop;
  return v_count;
end
$$;
comment on function pgflight.wake_parents(integer) is
  'Sweep: requeue parked parents whose children are all terminal; returns how many woke.';
grant execute on function pgflight.wake_parents(integer) to pgflight_operator;

commit;
