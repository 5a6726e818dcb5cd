-- Deploy pgflight:functions/spawn_children
begin;
set local role pgflight_owner;

-- Fan-out. A running attempt writes its plan as child steps, p_children a JSON array of
-- {"key": text, "recipe": text, "input": json, "options": {priority, max_attempts, lease_s,
-- max_runtime_s, backoff, concurrency_key, concurrency_limit}}; keys are unique under the parent, and a key that exists already
-- creates nothing (spawning again after a crash is a no-op). In the same transaction the parent
-- attempt goes to awaiting_children and gives up its lease, so its worker slot is free; the last
-- child to end wakes it (see _step_finished). From 128 new children the count is spread over
-- counter stripes (internals/_fan_in), so the children's ends do not queue on the parent's row. If every child named is already terminal the
-- parent is not parked (parked = false) and reads children_results at once.
-- options: fail_fast (boolean): the first child that ends unsuccessfully fails the parent and
-- cancels its siblings; by default the parent wakes and sees each failure. A child's options are
-- the step options of submit_run, checked by the same validator (docs/options.md).
-- Locking: the parent's attempt row (fencing check), its step row (the children counter), then its
-- counter stripes (no child of this fan-out can hold one yet).
-- Errors: ZF001 lease lost, ZF002 cancelled, ZF003 unknown attempt, 22023 malformed children
-- (a child with a key outside key, recipe, input and options is refused naming the key),
-- ZF005 a child input over settings.max_input_bytes or nested deeper than
-- settings.max_json_depth, more children than max_children_per_call in
-- the call or max_children_per_parent under the parent, a key or recipe over max_name_bytes
-- (issue 13: one call of a million children took 1.2 GB of backend memory); ZF012 the attempt is
-- held by another login's worker.
create or replace function pgflight.spawn_children(p_attempt_id bigint, p_token bigint, p_children jsonb, p_options jsonb default '{}')
returns table (children_total integer, created integer, parked boolean)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := pgflight._now();
  v_att pgflight.step_attempts;
  v_parent record;
  v_created integer;
  v_total integer;
  v_bad record;
  v_unknown record;
  v_max_bytes bigint;
  v_settings pgflight.settings;
  v_fail_fast boolean;
  v_children jsonb;
begin
  if p_children is null or jsonb_typeof(p_children) <> 'array' then
    raise exception using errcode = '22023', message = 'children must be a JSON array',
      hint = 'e.g. [{"key": "doc-1", "recipe": "review", "input": {...}}]';
  end if;
  select * into v_settings from pgflight.settings;
  perform pgflight._require_cap('max_children_per_call', v_settings.max_children_per_call,
                                jsonb_array_length(p_children), 'children in one call');
  v_fail_fast := (pgflight._check_options('spawn_children', p_options) ->> 'fail_fast')::boolean;
  v_att := pgflight._lock_held(p_attempt_id, p_token, 'spawn_children');
  v_max_bytes := v_settings.max_input_bytes;
  select e.ord, e.value into v_bad
    from jsonb_array_elements(p_children) with ordinality as e(value, ord)
   where jsonb_typeof(e.value) <> 'object'
      or jsonb_typeof(e.value -> 'key') is distinct from 'string' or btrim(e.value ->> 'key') = ''
      or length(e.value ->> 'key') > 512
      or jsonb_typeof(e.value -> 'recipe') is distinct from 'string' or btrim(e.value ->> 'recipe') = ''
      or length(e.value ->> 'recipe') > 256
      or pgflight._bad_child_flow(e.value -> 'options')
      or octet_length(coalesce(e.value -> 'input', '{}')::text) > v_max_bytes
   limit 1;
  if found then
    perform pgflight._require_cap('max_input_bytes', v_max_bytes,
                                  octet_length(coalesce(v_bad.value -> 'input', '{}')::text),
                                  format('child %s input (bytes)', v_bad.ord));
    raise exception using errcode = '22023', message = format('child %s is malformed', v_bad.ord),
      detail = left(v_bad.value::text, 200),
      hint = 'Each child needs a non-blank string key (at most 512 characters) and recipe (at most 256); '
             'a concurrency_limit needs a concurrency_key (a string of at most 200 characters).';
  end if;
  -- A child is key, recipe, input and options, nothing else: a step option beside options
  -- ({"backoff": ...} instead of {"options": {"backoff": ...}}) would be dropped without a word.
  select e.ord, k.key into v_unknown
    from jsonb_array_elements(p_children) with ordinality as e(value, ord),
         lateral jsonb_object_keys(e.value) as k(key)
   where k.key <> all (array['key', 'recipe', 'input', 'options'])
   order by e.ord, k.key
   limit 1;
  if found then
    raise exception using errcode = '22023',
      message = format('unknown key %s of spawn_children child %s', v_unknown.key, v_unknown.ord),
      detail = left((p_children -> (v_unknown.ord::integer - 1))::text, 200),
      hint = 'A child has key, recipe, input and options; step options (priority, max_attempts, lease_s, '
             'max_runtime_s, backoff, concurrency_key, concurrency_limit) go inside options.';
  end if;
  -- inputs nested deeper than the cap: one pass over the whole call (an input sits two levels
  -- down, [{"input": ...}]); the child is looked for only to name it
  if pgflight._json_too_deep(p_children, v_settings.max_json_depth + 2) then
    select e.ord, e.value into v_bad
      from jsonb_array_elements(p_children) with ordinality as e(value, ord)
     where pgflight._json_too_deep(e.value -> 'input', v_settings.max_json_depth)
     order by e.ord limit 1;
    if found then
      perform pgflight._require_json_depth(v_bad.value -> 'input', format('child %s input', v_bad.ord));
    end if;
  end if;
  -- Each child's options through the same step-options validator as submit_run (issue 12: one
  -- rule, so priority 1.5 is refused on both paths); the error names the child ("option lease_s
  -- of spawn_children child 3 ..."). v_children holds the normalised options, read with plain casts.
  select jsonb_agg(case when e.value ? 'options'
                        then e.value || jsonb_build_object('options',
                               pgflight._check_options('spawn_children child ' || e.ord, e.value -> 'options'))
                        else e.value end order by e.ord)
    into v_children
    from jsonb_array_elements(p_children) with ordinality as e(value, ord);

  perform pgflight._require_cap('max_name_bytes', v_settings.max_name_bytes,
                                (select max(greatest(octet_length(e.value ->> 'key'), octet_length(e.value ->> 'recipe')))
                                   from jsonb_array_elements(p_children) as e(value)),
                                'child key or recipe (bytes)');

  select s.* into v_parent from pgflight.steps s where s.id = v_att.step_id for update;
  -- children of this parent once this call is done: those there already plus the new keys (a key
  -- that exists creates nothing, so spawning again after a crash stays within the cap)
  perform pgflight._require_cap('max_children_per_parent', v_settings.max_children_per_parent,
                                (select count(*) from pgflight.steps c where c.parent_id = v_parent.id)
                                + (select count(distinct e.value ->> 'key') from jsonb_array_elements(p_children) as e(value)
                                    where not exists (select from pgflight.steps c
                                                       where c.parent_id = v_parent.id and c.step_key = e.value ->> 'key')),
                                'children of the parent');

  with wanted as (
    select e.value ->> 'key' as step_key, e.value ->> 'recipe' as recipe,
           coalesce(e.value -> 'input', '{}') as input, coalesce(e.value -> 'options', '{}') as o
      from jsonb_array_elements(coalesce(v_children, '[]')) as e(value)
  ), inserted as (
    insert into pgflight.steps (run_id, parent_id, depth, step_key, recipe, input, priority, max_attempts,
                                backoff, lease_s, max_runtime_s, created_at, concurrency_key, concurrency_limit)
    select v_parent.run_id, v_parent.id, v_parent.depth + 1, w.step_key, w.recipe, w.input,
           coalesce((w.o ->> 'priority')::integer, v_parent.priority),
           coalesce((w.o ->> 'max_attempts')::integer, v_parent.max_attempts),
           coalesce(w.o -> 'backoff', v_parent.backoff),
           coalesce((w.o ->> 'lease_s')::double precision, v_parent.lease_s),
           coalesce((w.o ->> 'max_runtime_s')::double precision, v_parent.max_runtime_s),
           v_now,
           -- a child's concurrency key is its own, never inherited: a parent holding a slot of a
           -- key its children also need would wait on them forever
           w.o ->> 'concurrency_key',
           case when w.o ->> 'concurrency_key' is not null then coalesce((w.o ->> 'concurrency_limit')::integer, 1) end
      from wanted w
    on conflict (parent_id, step_key) where parent_id is not null do nothing
    returning id, run_id, recipe, priority, concurrency_key, concurrency_limit
  ), attempts as (
    insert into pgflight.step_attempts (step_id, run_id, attempt_no, recipe, priority, status, available_after, created_at,
                                        workspace_id, concurrency_key, concurrency_limit)
    select i.id, i.run_id, 1, i.recipe, i.priority, 'queued', v_now, v_now,
           v_att.workspace_id, i.concurrency_key, i.concurrency_limit
      from inserted i
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
           fail_fast = coalesce(v_fail_fast, fail_fast)
     where id = v_parent.id;
    -- a large fan-out counts its children on stripes, so their ends do not queue on this row
    perform pgflight._fan_in_stripe(v_parent.id, v_created);
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
  'Returns (children_total, created, parked). Options: fail_fast (boolean). Each child''s options: '
  'priority, max_attempts, lease_s, max_runtime_s, backoff, concurrency_key, concurrency_limit, as '
  'submit_run (docs/options.md). '
  'Errors: ZF001, ZF002, ZF003, ZF005, ZF012, 22023.';
grant execute on function pgflight.spawn_children(bigint, bigint, jsonb, jsonb) to pgflight_worker;

commit;
