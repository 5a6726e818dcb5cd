"""
The main job's engine-independent parts: `pgflight review` over a library of legal documents.

- `discovery`: which documents, read safely (binary, empty, huge, non-UTF-8 handled).
- `clauses`: deterministic clause detection and license-family identification.
- `tools`: the agent's tools (read_lines, search, flag, finish) as plain functions.
- `policy`: the offline model's review policy over Anthropic-style requests.
- `report`: report.md, report.html and flags.csv.
"""
