-- Deploy pgflight:tables/approvals_payload
-- requires: tables/approvals
-- A decision may carry data (docs/waiting.md#approvals-that-carry-data): approve's payload is
-- stored with the decision and handed to the step that asked (request_approval returns it). For
-- an agent's tool gate it is {"arguments": {...}} (run the tool with these) or {"message": "..."}
-- (do not run it; tell the model this).
begin;
set local role pgflight_owner;

alter table pgflight.approvals add column payload jsonb;
comment on column pgflight.approvals.payload is
  'JSON the decider handed back with the decision (approve''s p_payload), null when none; capped by '
  'settings.max_approval_request_bytes. A tool gate''s: {"arguments": {...}} or {"message": "..."}.';

commit;
