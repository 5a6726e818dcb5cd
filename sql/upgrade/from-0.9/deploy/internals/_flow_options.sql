-- Deploy pgflight:internals/_flow_options
-- Defines: _require_known_keys(), _limit_option(), _workspace_id(), _start_at(), _concurrency_option(),
-- _bad_child_flow(), _set_paused().
-- Option checks of the flow-control API (issue 15): unknown keys and out-of-range numbers are
-- refused with 22023 naming the key, so nothing stored can make a later claim raise.
begin;
set local role pgflight_owner;

-- Refuse an options value that is not an object or has a key outside p_allowed.
create or replace function pgflight._require_known_keys(p_options jsonb, p_allowed text[])
returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_key text;
begin
  if p_options is null or jsonb_typeof(p_options) <> 'object' then
    raise exception using errcode = '22023', message = 'options must be a JSON object',
      detail = format('got %s', coalesce(jsonb_typeof(p_options), 'NULL')),
      hint = format('Pass an object with some of: %s.', array_to_string(p_allowed, ', '));
  end if;
  select k into v_key from jsonb_object_keys(p_options) k where k <> all (p_allowed) order by k limit 1;
  if v_key is not null then
    raise exception using errcode = '22023', message = format('unknown option %s', v_key),
      detail = format('options: %s', p_options),
      hint = format('Known options: %s.', array_to_string(p_allowed, ', '));
  end if;
end
$$;
comment on function pgflight._require_known_keys(jsonb, text[]) is
  'Internal: 22023 unless p_options is an object whose keys are all in p_allowed.';

-- A numeric limit from options: JSON null gives null (no limit); otherwise a finite number in
-- [p_min, p_max], whole when p_integer. 22023 naming the key otherwise.
create or replace function pgflight._limit_option(
  p_options jsonb, p_key text, p_min double precision, p_max double precision, p_integer boolean)
returns double precision
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_value double precision;
begin
  if jsonb_typeof(p_options -> p_key) is null or jsonb_typeof(p_options -> p_key) = 'null' then
    return null;
  end if;
  if jsonb_typeof(p_options -> p_key) <> 'number' then
    raise exception using errcode = '22023', message = format('option %s must be a number', p_key),
      detail = format('got %s', p_options -> p_key), hint = 'Pass a JSON number, or null to remove the limit.';
  end if;
  v_value := (p_options ->> p_key)::double precision;
  if v_value < p_min or v_value > p_max or (p_integer and v_value <> trunc(v_value)) then
    raise exception using errcode = '22023',
      message = format('option %s is out of range', p_key),
      detail = format('got %s; allowed: %s %s to %s', p_options -> p_key,
                      case when p_integer then 'whole numbers' else 'numbers' end, p_min, p_max),
      hint = 'Pass a value in range, or null to remove the limit.';
  end if;
  return v_value;
end
$$;
comment on function pgflight._limit_option(jsonb, text, double precision, double precision, boolean) is
  'Internal: a numeric limit option in range, or null; 22023 naming the key otherwise.';

-- The workspace id of a name, or ZF003 (internals/_trust's _unknown_workspace): for a name that
-- does not exist and for one on which the login has no grant at all, the same answer, so an
-- operator function never confirms another tenant's workspace name.
create or replace function pgflight._workspace_id(p_workspace text)
returns bigint
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_id bigint;
begin
  select w.id into v_id from pgflight.workspaces w where w.name = p_workspace;
  if v_id is null or not pgflight._may('reader', v_id) then
    perform pgflight._unknown_workspace(p_workspace);
  end if;
  return v_id;
end
$$;
comment on function pgflight._workspace_id(text) is
  'Internal: a workspace''s id by name; ZF003 when unknown or outside every lane of the login.';

-- When a new step becomes claimable, from its options, on the server's clock:
--   delay_s     seconds from now (0 .. 1e9);
--   not_before  an ISO 8601 timestamp WITH a time of day and a UTC offset
--               ("2030-01-01T09:00:00+02:00" or "...Z"); one without an offset, or a date alone
--               ("2030-01-01", whose "-01" is no offset), would be read in the session's
--               TimeZone, which the client may not know, so it is refused.
-- Neither: p_now. Both: 22023. Errors name the key.
create or replace function pgflight._start_at(p_options jsonb, p_now timestamptz)
returns timestamptz
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_text text;
  v_delay double precision;
begin
  if p_options ? 'delay_s' and p_options ? 'not_before' then
    raise exception using errcode = '22023', message = 'options delay_s and not_before exclude each other',
      hint = 'Pass one of them.';
  end if;
  if p_options ? 'delay_s' then
    v_delay := coalesce(pgflight._limit_option(p_options, 'delay_s', 0, 1e9, false), 0);
    return p_now + make_interval(secs => v_delay);
  end if;
  if not p_options ? 'not_before' or jsonb_typeof(p_options -> 'not_before') = 'null' then
    return p_now;
  end if;
  if jsonb_typeof(p_options -> 'not_before') <> 'string' then
    raise exception using errcode = '22023', message = 'option not_before must be a string',
      detail = format('got %s', p_options -> 'not_before'),
      hint = 'Pass an ISO 8601 timestamp with a UTC offset, e.g. "2030-01-01T09:00:00Z", or use delay_s.';
  end if;
  v_text := btrim(p_options ->> 'not_before');
  -- a date, a time of day (hours and minutes at least), then the offset: a date alone ends in
  -- "-DD", which the offset pattern alone took for an offset
  if v_text !~* '^[0-9]{4}-[0-9]{2}-[0-9]{2}[t ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)? *(z|utc|[+-][0-9]{1,2}(:?[0-9]{2}){0,2})$' then
    raise exception using errcode = '22023', message = 'option not_before needs a UTC offset and a time of day',
      detail = format('got %L', v_text),
      hint = 'Write the offset ("2030-01-01T09:00:00+02:00" or "...Z"), or use delay_s (seconds, on the server''s clock).';
  end if;
  begin
    return v_text::timestamptz;
  exception when others then
    raise exception using errcode = '22023', message = 'option not_before is not a timestamp',
      detail = format('got %L', v_text),
      hint = 'Pass an ISO 8601 timestamp with a UTC offset, e.g. "2030-01-01T09:00:00Z".';
  end;
end
$$;
comment on function pgflight._start_at(jsonb, timestamptz) is
  'Internal: when a step becomes claimable from options delay_s / not_before (offset required); 22023 otherwise.';

-- The concurrency key and limit of a new step from its options: concurrency_key (a string of at
-- most 200 characters) with concurrency_limit (a whole number 1 .. 1e6, default 1). 22023 otherwise.
create or replace function pgflight._concurrency_option(p_options jsonb, out o_key text, out o_limit integer)
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
  if jsonb_typeof(p_options -> 'concurrency_key') is null or jsonb_typeof(p_options -> 'concurrency_key') = 'null' then
    if p_options ? 'concurrency_limit' and jsonb_typeof(p_options -> 'concurrency_limit') <> 'null' then
      raise exception using errcode = '22023', message = 'option concurrency_limit needs concurrency_key',
        hint = 'Pass concurrency_key too, e.g. {"concurrency_key": "customer-42", "concurrency_limit": 1}.';
    end if;
    return;
  end if;
  if jsonb_typeof(p_options -> 'concurrency_key') <> 'string'
     or btrim(p_options ->> 'concurrency_key') = '' or length(p_options ->> 'concurrency_key') > 200 then
    raise exception using errcode = '22023', message = 'option concurrency_key must be a non-blank string of at most 200 characters',
      detail = format('got %s', left((p_options -> 'concurrency_key')::text, 300));
  end if;
  o_key := p_options ->> 'concurrency_key';
  o_limit := coalesce(pgflight._limit_option(p_options, 'concurrency_limit', 1, 1e6, true), 1)::integer;
end
$$;
comment on function pgflight._concurrency_option(jsonb) is
  'Internal: (concurrency_key, concurrency_limit) from a step''s options; 22023 when malformed.';

-- True when a child's options carry a malformed concurrency key or limit (spawn_children refuses
-- the whole call with 22023, naming the child).
create or replace function pgflight._bad_child_flow(p_options jsonb)
returns boolean
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
  perform pgflight._concurrency_option(coalesce(p_options, '{}'));
  return false;
exception when invalid_parameter_value then
  return true;
end
$$;
comment on function pgflight._bad_child_flow(jsonb) is
  'Internal: true when a child''s concurrency_key / concurrency_limit options are malformed.';

-- Pause (p_pause) or resume a workspace (p_kind 'workspace') or a recipe ('recipe'): the body of
-- pause_workspace, resume_workspace, pause_recipe and resume_recipe. A change of state appends an
-- events row (<kind>_paused / <kind>_resumed) with the session's login as actor and the note; a
-- resume notifies idle workers. Returns true when the state changed.
-- Errors: 22023 blank or long recipe name, long note; ZF003 unknown workspace.
create or replace function pgflight._set_paused(p_kind text, p_name text, p_pause boolean, p_note text)
returns boolean
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_ws bigint;
  v_changed boolean;
begin
  if length(p_note) > 1000 then
    raise exception using errcode = '22023', message = 'note is too long',
      detail = format('%s characters; at most 1000', length(p_note));
  end if;
  -- issue 13: a workspace needs the operator lane on it; a recipe spans every workspace
  v_ws := case when p_kind = 'workspace' then pgflight._workspace_id(p_name) end;
  perform pgflight._require_lane('operator', v_ws,
                                 case when p_pause then 'pause_' else 'resume_' end || p_kind);
  if p_kind = 'workspace' then
    if p_pause then
      insert into pgflight.workspace_limits (workspace_id) values (v_ws) on conflict do nothing;
    end if;
    update pgflight.workspace_limits l
       set paused_at = case when p_pause then pgflight._now() end,
           paused_by = case when p_pause then session_user::text end,
           updated_at = pgflight._now()
     where l.workspace_id = v_ws and (l.paused_at is null) = p_pause;
    v_changed := found;
  else
    if p_name is null or btrim(p_name) = '' or length(p_name) > 200 then
      raise exception using errcode = '22023', message = 'recipe is required',
        hint = 'Pass a recipe name of at most 200 characters.';
    end if;
    if p_pause then
      insert into pgflight.recipe_limits (recipe) values (p_name) on conflict do nothing;
    end if;
    update pgflight.recipe_limits l
       set paused_at = case when p_pause then pgflight._now() end,
           paused_by = case when p_pause then session_user::text end,
           updated_at = pgflight._now()
     where l.recipe = p_name and (l.paused_at is null) = p_pause;
    v_changed := found;
    -- a row with no limit and no pause is removed: the claim then skips the recipe checks entirely
    delete from pgflight.recipe_limits l where l.recipe = p_name and l.starts_per_s is null and l.paused_at is null;
  end if;
  if v_changed then
    perform pgflight._event(null, null, null, null, null, null,
                            p_kind || case when p_pause then '_paused' else '_resumed' end, session_user::text,
                            jsonb_build_object(p_kind, p_name, 'note', p_note));
    if not p_pause then
      perform pgflight._notify_ready();
    end if;
  end if;
  return v_changed;
end
$$;
comment on function pgflight._set_paused(text, text, boolean, text) is
  'Internal: pause or resume a workspace or recipe, logged with the login and note; true when the state changed.';

commit;
