#!/usr/bin/env python3
"""
Write sql/revert and sql/verify for every change whose deploy script defines functions,
procedures or views (all with `create or replace`), reading sqitch.plan to know each change's
instances. Tables, roles and the other hand-written changes are left alone.

- A change's first instance (the baseline): revert drops what its deploy creates, in reverse
  order.
- A reworked instance (`sqitch rework` after a tag copied the earlier scripts to
  `<change>@<tag>.sql`): revert restores the previous definition, i.e. runs the previous deploy
  script `deploy/<change>@<tag>.sql` (sqitch's rework convention), after dropping any function
  signature the rework added and any function whose result type the rework changed (such a
  deploy drops the function before it creates it again: `create or replace` cannot change a
  result type).
- Verify, for every instance: each function resolves by its full signature and carries exactly
  the settings (`pg_proc.proconfig`: search_path, planner settings) its definition gives; each
  view exists. A rework that forgets a `set` clause fails `sqitch verify`.

Run after adding or reworking a function or view change:  scripts/gen_sql_scripts.py
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SQL = ROOT / "sql"
CREATE = re.compile(r"create\s+or\s+replace\s+(function|procedure|view)\s+(pgflight\.\w+)\s*(\()?", re.I)
ROLE = "set local role pgflight_owner;\n"
# a definition's result type: from `returns` to the first clause that follows it
RETURNS = re.compile(
    r"\breturns\s+(.*?)\s+(?:language|as|set|security|immutable|stable|volatile)\b", re.I | re.S
)


@dataclass
class Instance:
    """One occurrence of a change in the plan; `suffix` is '' for the latest, '@tag' for older ones."""

    name: str
    suffix: str

    def path(self, kind: str) -> Path:
        head, _, base = self.name.rpartition("/")
        return SQL / kind / head / f"{base}{self.suffix}.sql"


@dataclass
class Obj:
    kind: str  # function | procedure | view
    signature: str  # pgflight.f(bigint, text) or pgflight.v
    config: list[str] | None  # expected proconfig, None for none
    returns: str = ""  # the result type as written (whitespace folded), "" for a view


def plan_instances(plan: Path = ROOT / "sqitch.plan") -> list[list[Instance]]:
    """Every change of the plan as its list of instances, oldest first (sqitch's file naming)."""
    entries: list[tuple[str, str]] = []  # ("change"|"tag", name)
    for line in plan.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("%", "#")):
            continue
        token = line.split()[0]
        entries.append(("tag", token) if token.startswith("@") else ("change", token))
    positions: dict[str, list[int]] = {}
    for i, (kind, name) in enumerate(entries):
        if kind == "change":
            positions.setdefault(name, []).append(i)
    out = []
    for name, where in positions.items():
        instances = []
        for k, pos in enumerate(where):
            if k == len(where) - 1:
                instances.append(Instance(name, ""))
                continue
            tags = [n for kind, n in entries[pos + 1 : where[k + 1]] if kind == "tag"]
            if not tags:
                raise SystemExit(f"{name} is reworked without a tag in between")
            found = [t for t in tags if Instance(name, t).path("deploy").exists()]
            instances.append(Instance(name, (found or tags)[0]))
        out.append(instances)
    return out


def _args(text: str, start: int) -> tuple[str, int]:
    depth, i = 1, start
    while depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    return text[start : i - 1], i


def _split_top(args: str) -> list[str]:
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
    return out


def _types(args: str) -> list[str]:
    types = []
    for a in _split_top(args):
        a = re.split(r"\s+default\s+|\s*:=\s*", a.strip(), flags=re.I)[0]
        words = a.split()
        if words and words[0].lower() in ("in", "out", "inout", "variadic"):
            if words[0].lower() == "out":
                continue
            words = words[1:]
        types.append(" ".join(words[1:]))
    return types


def _config(header: str) -> list[str] | None:
    """proconfig as PostgreSQL stores it, from the `set name = value` clauses of a definition."""
    out = []
    for name, value in re.findall(r"^\s*set\s+(\w+)\s*(?:=|to)\s*(.+?)\s*$", header, re.I | re.M):
        value = value.strip()
        if value.startswith("'") and value != "''":  # pg_dump's form: SET search_path TO 'a', 'b'
            value = ", ".join(v.strip().strip("'") for v in value.split(","))
        value = '""' if value == "''" else value.strip("'")
        out.append(f"{name.lower()}={value}")
    return out or None


def objects(deploy: str) -> list[Obj]:
    """The functions, procedures and views a deploy script creates, in order."""
    found = []
    for m in CREATE.finditer(deploy):
        kind, name = m.group(1).lower(), m.group(2)
        if kind == "view":
            found.append(Obj(kind, name, None))
            continue
        args, end = _args(deploy, m.end())
        body = re.compile(r"\bas\s+\$\w*\$", re.I).search(deploy, end)
        header = deploy[end : body.start() if body else len(deploy)]
        ret = RETURNS.search(header)
        returns = " ".join(ret.group(1).lower().split()) if ret else ""
        found.append(Obj(kind, f"{name}({', '.join(_types(args))})", _config(header), returns))
    return found


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def verify_script(name: str, objs: list[Obj]) -> str:
    lines = [
        f"-- Verify pgflight:{name}",
        "-- Written by scripts/gen_sql_scripts.py: signatures and their settings.",
    ]
    for o in objs:
        if o.kind == "view":
            lines.append(
                "select 1 / (c.relkind = 'v')::int from pg_catalog.pg_class c"
                f" where c.oid = {_quote(o.signature)}::regclass;"
            )
            continue
        want = (
            "null::text[]" if o.config is None else "array[" + ", ".join(map(_quote, o.config)) + "]::text[]"
        )
        lines.append(
            f"""do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = {_quote(o.signature)}::regprocedure;
  if v_config is distinct from {want} then
    raise exception '{o.signature.replace("'", "''")} has settings %, expected %', v_config, {want};
  end if;
end
$verify$;"""
        )
    return "\n".join(lines) + "\n"


def _drops(objs: list[Obj]) -> str:
    return "".join(f"drop {o.kind} {o.signature};\n" for o in reversed(objs))


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def tags_since(first: str, plan: Path = ROOT / "sqitch.plan") -> list[str]:
    """The plan's tags from `first` on, in plan order (no "@")."""
    tags = [ln.split()[0][1:] for ln in plan.read_text().splitlines() if ln.startswith("@")]
    return tags[tags.index(first) :] if first in tags else []


def main() -> None:
    for instances in plan_instances():
        for k, inst in enumerate(instances):
            deploy_path = inst.path("deploy")
            if not deploy_path.exists():
                continue
            deploy = deploy_path.read_text()
            objs = objects(deploy)
            if not objs:
                continue
            label = f"{inst.name}{inst.suffix}"
            write(inst.path("verify"), verify_script(label, objs))
            if k == 0:
                revert = f"-- Revert pgflight:{label}\nbegin;\n{ROLE}{_drops(objs)}commit;\n"
            else:
                prev = instances[k - 1]
                old = prev.path("deploy").read_text()
                old_returns = {o.signature: o.returns for o in objects(old)}
                # a signature the rework added, or one whose result type it changed (the deploy
                # drops and creates it; `create or replace` cannot change a result type back)
                added = [o for o in objs if old_returns.get(o.signature, o.returns) != o.returns]
                added = [o for o in objs if o.signature not in old_returns] + added
                body = re.sub(r"^-- Deploy pgflight:\S+\n", "", old, count=1)
                if added:
                    body = body.replace(ROLE, ROLE + _drops(added), 1)
                # a view that gained columns cannot be replaced by its narrower old definition:
                # the revert of a view reworked after @v0.3.0 (where this rule came in) drops it
                # first; the reverts of earlier reworks stay as they were released
                views = [o for o in objects(old) if o.kind == "view"]
                if views and prev.suffix[1:] in tags_since("v0.3.0"):
                    body = body.replace(ROLE, ROLE + "".join(f"drop view {o.signature};\n" for o in views), 1)
                revert = (
                    f"-- Revert pgflight:{label}: restores the previous definition,"
                    f" deploy/{prev.name}{prev.suffix}.sql (written by scripts/gen_sql_scripts.py)\n{body}"
                )
            write(inst.path("revert"), revert)


if __name__ == "__main__":
    main()
