select singleton, max_input_bytes, default_lease_s, default_max_attempts, reclaim_in_claim,
       allow_fake_clock, purge_after_s
  from pgflight.settings where false;
