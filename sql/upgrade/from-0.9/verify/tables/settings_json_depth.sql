-- Verify pgflight:tables/settings_json_depth
select max_json_depth from pgflight.settings where false;
