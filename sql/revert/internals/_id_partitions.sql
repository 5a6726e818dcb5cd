-- Revert pgflight:internals/_id_partitions
begin;
set local role pgflight_owner;
drop function pgflight._id_partitions(text);
commit;
