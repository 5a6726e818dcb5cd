-- Deploy pgflight:tables/step_attempts_flow
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
