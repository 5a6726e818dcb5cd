-- Verify pgflight:tables/workspace_grants
select login, workspace_id, lane, granted_at, granted_by from pgflight.workspace_grants where false;
