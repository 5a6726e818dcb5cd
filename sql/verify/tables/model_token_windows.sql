-- Verify pgflight:tables/model_token_windows
select workspace_id, bucket, tokens from pgflight.model_token_windows where false;
