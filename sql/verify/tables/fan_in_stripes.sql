-- Verify pgflight:tables/fan_in_stripes
select parent_id, stripe, pending, allotted from pgflight.fan_in_stripes where false;
