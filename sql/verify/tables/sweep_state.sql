-- Verify pgflight:tables/sweep_state
select id, last_pass_at, last_partitions_at, reclaim_batch from pgflight.sweep_state where false;
