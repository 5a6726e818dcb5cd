-- Revert pgflight:internals/_maintain_id_partitions
begin;
set local role pgflight_owner;
drop function pgflight._maintain_id_partitions(text[], text, bigint, integer);
commit;
