-- Deploy pgflight:internals/_flow_triggers
-- Defines: _fill_attempt_flow(), _key_lock(), _key_slot_freed().
-- The trigger functions of step_attempts' flow columns (issue 15); the triggers themselves are
-- tables/step_attempts_triggers. None is granted to any role.
begin;
set local role pgflight_owner;

-- Fills workspace_id and the key of an attempt inserted without them (the retry paths copy
-- nothing but recipe and priority). submit_run and spawn_children pass them, so on the bulk
-- paths the WHEN clause keeps this trigger from running at all.
create or replace function pgflight._fill_attempt_flow()
returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
  select r.workspace_id into new.workspace_id from pgflight.runs r where r.id = new.run_id;
  select s.concurrency_key, s.concurrency_limit into new.concurrency_key, new.concurrency_limit
    from pgflight.steps s where s.id = new.step_id;
  return new;
end
$$;
comment on function pgflight._fill_attempt_flow() is
  'Internal trigger: copy workspace_id and the concurrency key onto an attempt inserted without them.';

-- The advisory lock of one (workspace, key): claimers take it exclusively with a try (never
-- wait), the trigger below shares it (waits only for a claimer's commit). A hash collision only
-- makes two keys skip each other now and then.
create or replace function pgflight._key_lock(p_workspace_id bigint, p_key text)
returns bigint
language sql immutable
set search_path = pg_catalog, pg_temp
as $$ select pg_catalog.hashtextextended('pgflight.key:' || p_workspace_id || ':' || p_key, 0) $$;
comment on function pgflight._key_lock(bigint, text) is 'Internal: advisory lock id of a concurrency key.';

-- A keyed attempt left the set that counts against its key (leased, or queued and woken): wake
-- the first parked attempt of the key. The shared lock waits for a claimer that is parking
-- attempts of this key to commit, so a park and a release can never miss each other.
create or replace function pgflight._key_slot_freed()
returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
  perform pg_catalog.pg_advisory_xact_lock_shared(pgflight._key_lock(old.workspace_id, old.concurrency_key));
  update pgflight.step_attempts a set available_after = pgflight._now()
   where a.id = (select p.id from pgflight.step_attempts p
                  where p.workspace_id = old.workspace_id and p.concurrency_key = old.concurrency_key
                    and p.status = 'queued' and p.available_after = 'infinity'
                  order by p.priority desc, p.id
                  limit 1
                    for update skip locked);
  return null;
end
$$;
comment on function pgflight._key_slot_freed() is
  'Internal trigger: a keyed attempt stopped holding or waiting for a slot; wake one parked attempt of its key.';

commit;
