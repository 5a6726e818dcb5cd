select * from pgflight.workspaces where false;
