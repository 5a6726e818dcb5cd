-- Deploy pgflight:tables/step_attempts_flow
-- requires: tables/step_attempts tables/runs tables/steps
-- What the fair claim needs on every attempt (issue 15): its workspace, and the concurrency key it
-- counts against, copied from the run and the step the way recipe and priority already are, so
-- every claim statement reads one table and can run inside one workspace (DESIGN §9).
--
-- A queued attempt whose concurrency key is full is *parked*: available_after = 'infinity'. The
-- ready indexes leave parked rows out, so a backlog of 100,000 steps of one full key costs the
-- claim nothing; the attempt that frees a slot wakes one parked attempt of its key (trigger
-- below), and the sweep wake_parked_keys repairs any chain a cancel broke.
begin;
set local role pgflight_owner;

alter table pgflight.steps
  add column concurrency_key   text,
  add column concurrency_limit integer,
  add constraint concurrency_key_has_a_limit check ((concurrency_key is null) = (concurrency_limit is null)),
  add constraint concurrency_limit_is_positive check (concurrency_limit is null or concurrency_limit > 0),
  add constraint concurrency_key_is_short check (concurrency_key is null or length(concurrency_key) <= 200);
comment on column pgflight.steps.concurrency_key is
  'Steps of one workspace that share this key run at most concurrency_limit attempts at once (null: no key).';

alter table pgflight.step_attempts
  add column workspace_id      bigint,
  add column concurrency_key   text,
  add column concurrency_limit integer;
update pgflight.step_attempts a set workspace_id = r.workspace_id from pgflight.runs r where r.id = a.run_id;
alter table pgflight.step_attempts alter column workspace_id set not null;
comment on column pgflight.step_attempts.workspace_id is 'The run''s workspace, copied so the claim reads one table.';
comment on column pgflight.step_attempts.concurrency_key is
  'The step''s concurrency key and limit, copied like recipe and priority. A queued attempt with '
  'available_after = ''infinity'' is parked: its key was full; a freed slot wakes it.';

-- Fills workspace_id and the key of an attempt inserted without them (the retry paths copy
-- nothing but recipe and priority). submit_run and spawn_children pass them, so on the bulk
-- paths the WHEN clause keeps this trigger from running at all.
create function pgflight._fill_attempt_flow()
returns trigger
language plpgsql
set search_path = ''
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
create trigger step_attempts_fill_flow before insert on pgflight.step_attempts
  for each row when (new.workspace_id is null) execute function pgflight._fill_attempt_flow();

-- The advisory lock of one (workspace, key): claimers take it exclusively with a try (never
-- wait), the trigger below shares it (waits only for a claimer's commit). A hash collision only
-- makes two keys skip each other now and then.
create function pgflight._key_lock(p_workspace_id bigint, p_key text)
returns bigint
language sql immutable
set search_path = ''
as $$ select pg_catalog.hashtextextended('pgflight.key:' || p_workspace_id || ':' || p_key, 0) $$;
comment on function pgflight._key_lock(bigint, text) is 'Internal: advisory lock id of a concurrency key.';

-- A keyed attempt left the set that counts against its key (leased, or queued and woken): wake
-- the first parked attempt of the key. The shared lock waits for a claimer that is parking
-- attempts of this key to commit, so a park and a release can never miss each other.
create function pgflight._key_slot_freed()
returns trigger
language plpgsql
set search_path = ''
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
create trigger step_attempts_key_slot_freed after update of status on pgflight.step_attempts
  for each row
  when (old.concurrency_key is not null
        and old.status in ('queued', 'claimed', 'running', 'cancel_requested')
        and new.status not in ('queued', 'claimed', 'running', 'cancel_requested'))
  execute function pgflight._key_slot_freed();

-- The claim's indexes. Per workspace in claim order (a fair claim walks one workspace at a time);
-- per recipe then workspace (a recipe-targeted claim never walks other recipes' backlog). Both
-- leave parked rows out. The old global ready index is replaced by these.
drop index pgflight.step_attempts_ready_idx;
create index step_attempts_ws_ready_idx on pgflight.step_attempts (workspace_id, priority desc, available_after, id)
  where status = 'queued' and available_after < 'infinity';
create index step_attempts_recipe_ready_idx on pgflight.step_attempts (recipe, workspace_id, priority desc, available_after, id)
  where status = 'queued' and available_after < 'infinity';
-- In-flight counts under a cap or a key: leased attempts per workspace and per key.
create index step_attempts_leased_ws_idx on pgflight.step_attempts (workspace_id)
  where status in ('claimed', 'running', 'cancel_requested');
create index step_attempts_leased_key_idx on pgflight.step_attempts (workspace_id, concurrency_key)
  where status in ('claimed', 'running', 'cancel_requested') and concurrency_key is not null;
-- Queued attempts of a key, in wake order: the claim parks a full key's backlog through it, the
-- trigger wakes the first parked one.
create index step_attempts_queued_key_idx on pgflight.step_attempts (workspace_id, concurrency_key, priority desc, id)
  where status = 'queued' and concurrency_key is not null;

commit;
