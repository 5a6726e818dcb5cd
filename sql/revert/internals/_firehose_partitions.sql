-- Revert pgflight:internals/_firehose_partitions
begin;
set local role pgflight_owner;
drop function pgflight._firehose_partitions();
commit;
