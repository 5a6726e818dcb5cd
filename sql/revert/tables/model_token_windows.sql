-- Revert pgflight:tables/model_token_windows
begin;
set local role pgflight_owner;
drop table pgflight.model_token_windows;
commit;
