-- Deploy pgflight:tables/model_token_windows

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.model_token_windows (
    workspace_id bigint NOT NULL,
    bucket timestamp with time zone NOT NULL,
    tokens bigint DEFAULT 0 NOT NULL
)
WITH (fillfactor='70');

COMMENT ON TABLE pgflight.model_token_windows IS 'Model tokens (input + output) of a workspace per 5-second bucket (bucket: its start): the rolling minute that admission checks against workspace_limits.model_tokens_per_min. Estimates of admitted calls are added at admission and replaced by the actual tokens when the call is recorded.';

ALTER TABLE ONLY pgflight.model_token_windows
    ADD CONSTRAINT model_token_window_is_unique PRIMARY KEY (workspace_id, bucket);

ALTER TABLE ONLY pgflight.model_token_windows
    ADD CONSTRAINT model_token_windows_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

commit;
