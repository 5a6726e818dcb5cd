-- Deploy pgflight:functions/_internals
-- requires: tables/step_attempts tables/events tables/approvals
-- Internal helpers shared by the API functions: the event append, option parsing, the backoff
-- policy and the rejection of stale writers. None is granted to any role.
begin;
set local role pgflight_owner;

-- Append one row to the transition log. Called in the same transaction as the change.
create function pgflight._event(
  p_run_id bigint, p_step_id bigint, p_attempt_id bigint, p_from text, p_to text,
  p_worker_id bigint, p_reason text, p_actor text default null, p_detail jsonb default null)
returns void
language plpgsql volatile
set search_path = ''
as $$
begin
  -- PL/pgSQL rather than SQL: its INSERT plan is cached across calls, a SQL function's is not
  insert into pgflight.events (at, run_id, step_id, attempt_id, from_status, to_status, worker_id, reason, actor, detail)
  values (pgflight._now(), p_run_id, p_step_id, p_attempt_id, p_from, p_to, p_worker_id, p_reason, p_actor, p_detail);
end
$$;
comment on function pgflight._event(bigint, bigint, bigint, text, text, bigint, text, text, jsonb) is
  'Internal: append one events row.';

-- Wake idle workers. The payload is empty (never user data, C35), and PostgreSQL folds identical
-- notifications of one transaction into one, so a transaction sends at most one.
create function pgflight._notify_ready()
returns void
language plpgsql volatile
set search_path = ''
as $$
begin
  perform pg_catalog.pg_notify('pgflight_ready', '');
end
$$;
comment on function pgflight._notify_ready() is 'Internal: NOTIFY pgflight_ready with an empty payload.';

-- Read a numeric option: absent or JSON null gives the default; any other non-number raises 22023.
create function pgflight._opt_num(p_options jsonb, p_key text, p_default double precision)
returns double precision
language plpgsql immutable
set search_path = ''
as $$
begin
  if p_options is null or p_options -> p_key is null or jsonb_typeof(p_options -> p_key) = 'null' then
    return p_default;
  end if;
  if jsonb_typeof(p_options -> p_key) <> 'number' then
    raise exception using
      errcode = '22023',
      message = format('option %s must be a number', p_key),
      detail  = format('got %s', p_options -> p_key),
      hint    = 'Pass the option as a JSON number, e.g. {"' || p_key || '": 5}.';
  end if;
  return (p_options ->> p_key)::double precision;
end
$$;
comment on function pgflight._opt_num(jsonb, text, double precision) is
  'Internal: a numeric option or its default; 22023 when the value is not a JSON number.';

create function pgflight._opt_text(p_options jsonb, p_key text, p_default text)
returns text
language plpgsql immutable
set search_path = ''
as $$
begin
  if p_options is null or p_options -> p_key is null or jsonb_typeof(p_options -> p_key) = 'null' then
    return p_default;
  end if;
  if jsonb_typeof(p_options -> p_key) <> 'string' then
    raise exception using
      errcode = '22023',
      message = format('option %s must be a string', p_key),
      detail  = format('got %s', p_options -> p_key),
      hint    = 'Pass the option as a JSON string.';
  end if;
  return p_options ->> p_key;
end
$$;
comment on function pgflight._opt_text(jsonb, text, text) is
  'Internal: a string option or its default; 22023 when the value is not a JSON string.';

-- Raise 22023 for a missing or non-positive argument.
create function pgflight._require_positive(p_name text, p_value double precision)
returns void
language plpgsql immutable
set search_path = ''
as $$
begin
  if p_value is null or p_value <= 0 or p_value = 'NaN'::double precision or p_value = 'Infinity'::double precision then
    raise exception using
      errcode = '22023',
      message = format('%s must be a positive number', p_name),
      detail  = format('got %s', coalesce(p_value::text, 'NULL')),
      hint    = format('Pass a finite %s greater than zero.', p_name);
  end if;
end
$$;
comment on function pgflight._require_positive(text, double precision) is
  'Internal: 22023 unless the value is a finite number above zero.';

-- Seconds to wait before retry number p_failed (1-based): exponential, capped, with jitter.
-- backoff options: base_s (default 1), factor (2), max_s (300), jitter (0.2: plus or minus 20 %).
create function pgflight._backoff_s(p_failed integer, p_backoff jsonb)
returns double precision
language sql volatile
set search_path = ''
as $$
  select greatest(0, least(pgflight._opt_num(p_backoff, 'max_s', 300),
                           pgflight._opt_num(p_backoff, 'base_s', 1)
                           * power(pgflight._opt_num(p_backoff, 'factor', 2), greatest(p_failed - 1, 0)))
              * (1 + pgflight._opt_num(p_backoff, 'jitter', 0.2) * (2 * random() - 1)))
$$;
comment on function pgflight._backoff_s(integer, jsonb) is
  'Internal: retry delay in seconds, min(max_s, base_s * factor^(n-1)) times 1 +/- jitter.';

-- Raise the right error for a worker write that did not match a live, owned attempt:
-- ZF002 when the attempt was cancelled, ZF001 (lease lost) otherwise, ZF003 when unknown.
create function pgflight._reject_write(p_attempt_id bigint, p_token bigint, p_operation text)
returns void
language plpgsql stable
set search_path = ''
as $$
declare
  v_status text;
  v_token bigint;
begin
  select a.status, a.fencing_token into v_status, v_token
    from pgflight.step_attempts a where a.id = p_attempt_id;
  if not found then
    raise exception using
      errcode = 'ZF003',
      message = format('unknown attempt %s', p_attempt_id),
      hint    = 'Use the attempt_id returned by claim_batch.';
  elsif v_status in ('cancel_requested', 'cancelled') and v_token is not distinct from p_token then
    raise exception using
      errcode = 'ZF002',
      message = format('%s rejected: attempt %s was cancelled', p_operation, p_attempt_id),
      detail  = format('attempt status %s', v_status),
      hint    = 'The run or step was cancelled; stop the work and call release_step to acknowledge.';
  else
    raise exception using
      errcode = 'ZF001',
      message = format('lease lost on attempt %s', p_attempt_id),
      detail  = format('%s refused: attempt status %s, current token %s, caller token %s',
                       p_operation, v_status, coalesce(v_token::text, 'none'), coalesce(p_token::text, 'none')),
      hint    = 'The step was reclaimed or finished; abandon this attempt and write nothing.';
  end if;
end
$$;
comment on function pgflight._reject_write(bigint, bigint, text) is
  'Internal: raises ZF001 (lease lost), ZF002 (cancelled) or ZF003 (unknown attempt).';

-- Lock the attempt a worker write is about: it must be live and held with this fencing token
-- (claimed or running; also cancel_requested when p_with_cancel_requested, for the writes that
-- acknowledge a cancel). Returns the locked row; otherwise raises as _reject_write does. Every
-- fenced write starts here, so the fencing rule is written once.
create function pgflight._lock_held(p_attempt_id bigint, p_token bigint, p_operation text,
                                    p_with_cancel_requested boolean default false)
returns pgflight.step_attempts
language plpgsql volatile
set search_path = ''
as $$
declare
  v_row pgflight.step_attempts;
begin
  select a.* into v_row from pgflight.step_attempts a
   where a.id = p_attempt_id and a.fencing_token = p_token
     and (a.status in ('claimed', 'running') or (p_with_cancel_requested and a.status = 'cancel_requested'))
     for update;
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, p_operation);
  end if;
  return v_row;
end
$$;
comment on function pgflight._lock_held(bigint, bigint, text, boolean) is
  'Internal: lock a live attempt held with this token, or raise ZF001 / ZF002 / ZF003.';

commit;
