#!/usr/bin/env python3
"""Write sql/revert and sql/verify scripts for function changes from their deploy scripts.

A function change's revert drops exactly the functions its deploy creates (by full signature),
and its verify resolves each signature. Run after adding a function to a deploy script.
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent / "sql"
CREATE = re.compile(r"create\s+(function|procedure)\s+(pgflight\.\w+)\s*\(", re.I)


def _args(text: str, start: int) -> str:
    depth, i = 1, start
    while depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    return text[start : i - 1]


def _types(args: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in args:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += {"(": 1, ")": -1}.get(ch, 0)
        cur += ch
    if cur.strip():
        out.append(cur)
    types = []
    for a in out:
        a = re.split(r"\s+default\s+|\s*:=\s*", a.strip(), flags=re.I)[0]
        types.append(" ".join(a.split()[1:]))
    return types


for deploy in sorted((ROOT / "deploy" / "functions").glob("*.sql")):
    text = deploy.read_text()
    sigs = []
    for m in CREATE.finditer(text):
        sigs.append((m.group(1).lower(), f"{m.group(2)}({', '.join(_types(_args(text, m.end())))})"))
    rel = deploy.relative_to(ROOT / "deploy")
    drops = "".join(f"drop {kind} {sig};\n" for kind, sig in reversed(sigs))
    (ROOT / "revert" / rel).write_text(f"-- Revert pgflight:{rel.with_suffix('')}\nbegin;\n{drops}commit;\n")
    checks = "".join(f"select '{sig}'::regprocedure;\n" for _, sig in sigs)
    (ROOT / "verify" / rel).write_text(f"-- Verify pgflight:{rel.with_suffix('')}\n{checks}")
