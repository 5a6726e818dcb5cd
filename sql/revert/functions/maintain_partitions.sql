-- Revert pgflight:functions/maintain_partitions
begin;
set local role pgflight_owner;
drop function pgflight.maintain_partitions(integer);
commit;
