-- Deploy pgflight:internals/_seq_band_tool_results

begin;

set local role pgflight_owner;

-- The transcript's seq bands, named once (python_worker/pgflight/transcript.py names them for the
-- client; docs/agents.md, "The transcript's numbering"): within an iteration, seq 0 .. k are the
-- model's response blocks (role assistant; iteration 0 holds the task), 1000 + j is the
-- tool_result answering the tool_use at seq j (role user), 2000 and on are blocks of the system
-- (an api_error record_trace writes). A response stays in its band while it holds at most 1000
-- blocks (settings.max_trace_blocks_per_iteration, 1000 by default). Immutable SQL with no SET clause:
-- the planner inlines each as its constant, so a query reads the same as with the literal.
CREATE OR REPLACE FUNCTION pgflight._seq_band_tool_results() RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$ select 1000 $$;

COMMENT ON FUNCTION pgflight._seq_band_tool_results() IS 'Internal: the first seq of the transcript''s tool results (a tool_use at seq j has its result at this + j).';

REVOKE ALL ON FUNCTION pgflight._seq_band_tool_results() FROM PUBLIC;

commit;
