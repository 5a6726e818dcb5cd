-- Revert pgflight:internals/_cancel_tree
begin;
set local role pgflight_owner;
drop function pgflight._cancel_tree(bigint, bigint, text, text);
commit;
