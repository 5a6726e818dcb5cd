-- Revert pgflight:internals/_transitions@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight._reopen_step(bigint, text, text, text);
drop function pgflight._decide(bigint, text, text, text, text);
drop function pgflight._complete_many(bigint[], bigint[], jsonb[], timestamptz);
drop function pgflight._reclaim(timestamptz, integer);
drop function pgflight._fail_attempt(bigint, text, text, jsonb, boolean, double precision, text, text);
drop function pgflight._step_finished(bigint, text, text);
drop function pgflight._tree_steps(bigint, bigint);
drop function pgflight._cancel_tree(bigint, bigint, text, text);
drop function pgflight._cancel_steps(bigint[], text, text);
drop function pgflight._wake(bigint, text, text);
commit;
