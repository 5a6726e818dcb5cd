#!/usr/bin/env python3
"""
Re-baseline the sqitch plan at a release: replace a plan that carries its history (sqitch rework
copies `<change>@<tag>.sql`, whole topic files per change) with a plan of one change per table,
view, function and internal function, in dependency order, written from the schema the current
plan deploys, and tagged with the release.

    scripts/rebaseline_plan.py --tag v1.0.0          # rewrites sqitch.plan and sql/ in place

What it does, in order:

1. Deploys the current plan into a scratch database (a throwaway cluster, or the server
   PGFLIGHT_TEST_DSN names) and reads back its schema: `pg_dump --schema-only --schema=pgflight`,
   split into pg_dump's entries, and the catalogue (pg_depend, pg_proc, pg_class).
2. Groups the entries by object: a table with its sequences, defaults, constraints, indexes,
   triggers, partitions, comments and grants; a function with all its overloads, comments and
   grants; a view; a standalone sequence. The changes that are not objects of schema pgflight
   (roles, schema, cron_extension, roles/*) are copied as they are.
3. Orders the changes: what the catalogue says an object needs at creation (pg_depend: a view's
   tables and functions, a default's or trigger's function, a foreign key's table, a signature's
   row type) and the names an SQL-language body calls (checked at creation) always; the names a
   PL/pgSQL body calls (not checked at creation, not in pg_depend) where they make no cycle.
   Each change `requires` the changes its object needs.
4. Writes sqitch.plan (fixed planner and date, so a rerun on the same schema writes the same
   change ids), sql/deploy, and for tables and sequences their revert and verify; the revert and
   verify of functions and views come from scripts/gen_sql_scripts.py, as for any later change.
5. Keeps the way up from the release before: sql/upgrade/from-<previous>/ holds the old plan and
   the deploy and verify scripts of its changes after its last tag only (the bridge that `pgflight
   migrate` runs on a database of that release), the old plan's committed dump, the commit the old
   plan was read from, and a data dump of the rows a fresh deploy writes (settings, prices).
6. Deletes the old scripts, regenerates sql/schema.dump.sql, and checks that a fresh deploy of the
   new plan dumps exactly as the old plan did (tests_py/test_rebaseline.py checks it again).

Takes 3-5 minutes (two deploys of the old plan, one of the new). Run it on a clean checkout.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python_worker"))

import psycopg  # noqa: E402
from psycopg.conninfo import make_conninfo  # noqa: E402

from pgflight import migrate  # noqa: E402
from pgflight.embedded import Cluster, find_bindir  # noqa: E402

SQL = ROOT / "sql"
PLANNER = "pgflight dev <dev@pgflight.dev>"
# The folders of changes written from the catalogue. A change of the old plan outside them (roles,
# schema, cron_extension, roles/*: cluster-wide roles and privileges, the schema, the extension,
# which pg_dump of the schema does not see) is kept as written, with its requires among them.
GENERATED = ("tables", "sequences", "internals", "functions", "views", "cron", "indexes")
# ... and this one goes last: it hands the functions owned by another role than pgflight_owner
# over to that role, so it needs them
PRIVILEGED = "roles/pgflight_privileged"
OWNER = "pgflight_owner"
# Rows a deploy writes that are not constants (the deploying login, a random secret): the
# table's current deploy script writes them with these statements, kept as they are.
SEED_FROM_SCRIPT = ("workspace_grants", "wake_ticket_secret")
# The transition log's day partitions around the deploy's date (maintain_partitions keeps them
# ahead afterwards); pg_dump of the schema leaves them out, as they are named by the date.
EVENT_DAYS = """do $$
declare
  v_today date := (pg_catalog.now() at time zone 'UTC')::date;
  v_day date;
begin
  for i in -1 .. 3 loop
    v_day := v_today + i;
    execute pg_catalog.format(
      'create table pgflight.%I partition of pgflight.events for values from (%L) to (%L)',
      'events_' || pg_catalog.to_char(v_day, 'YYYYMMDD'), v_day::timestamp at time zone 'UTC',
      (v_day + 1)::timestamp at time zone 'UTC');
  end loop;
end
$$;"""
EXTRA_SQL = {"events": EVENT_DAYS}
RANK = {"sequences": 0, "tables": 1, "internals": 2, "functions": 3, "cron": 4, "views": 5}
ENTRY = re.compile(r"^--\n-- (?:Data for )?Name: (.*?); Type: (.*?); Schema: (.*?); Owner: (.*?)\n--\n", re.M)


def sh(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True).stdout


# --- the old plan ------------------------------------------------------------------------------


def plan_lines(plan: Path) -> list[str]:
    return [ln for ln in plan.read_text().splitlines() if ln.strip() and not ln.startswith(("%", "#"))]


def old_changes(plan: Path) -> list[str]:
    """The plan's change names in first-appearance order."""
    return list(dict.fromkeys(ln.split()[0] for ln in plan_lines(plan) if not ln.startswith("@")))


def after_last_tag(plan: Path) -> list[str]:
    lines = plan_lines(plan)
    last = max(i for i, ln in enumerate(lines) if ln.startswith("@"))
    return list(dict.fromkeys(ln.split()[0] for ln in lines[last + 1 :]))


def doc_comments(plan: Path) -> dict[str, str]:
    """
    The comment block right above each `create or replace function|view pgflight.<name>` of the
    live deploy scripts, the script of the plan's latest change that defines the name winning: a
    function's prose, which pg_dump does not keep.
    """
    out: dict[str, str] = {}
    last = list(dict.fromkeys(reversed([ln.split()[0] for ln in plan_lines(plan) if not ln.startswith("@")])))
    for change in reversed(last):
        path = SQL / "deploy" / f"{change}.sql"
        if not path.exists():
            continue
        lines = path.read_text().splitlines()
        for i, ln in enumerate(lines):
            m = re.match(r"create\s+or\s+replace\s+(?:function|procedure|view)\s+pgflight\.(\w+)", ln, re.I)
            if not m:
                continue
            j = i
            while j > 0 and lines[j - 1].startswith("--") and not lines[j - 1].startswith("-- Deploy"):
                j -= 1
            block = [x for x in lines[j:i] if not re.match(r"-- (requires|Defines):", x)]
            if block:
                out[m.group(1)] = "\n".join(block)
    return out


# --- reading the deployed schema ---------------------------------------------------------------


@dataclass
class Change:
    name: str
    entries: list[tuple[str, str, str]] = field(default_factory=list)  # (type, name, sql)
    hard: set[str] = field(default_factory=set)
    soft: set[str] = field(default_factory=set)
    owners: set[str] = field(default_factory=set)
    signatures: list[str] = field(default_factory=list)  # functions: regprocedure text
    relkind: str = ""


def dump(dsn: str, *extra: str) -> str:
    params = ["--schema=pgflight", "--no-tablespaces", *extra, "--dbname", dsn]
    return subprocess.run(
        [str(find_bindir() / "pg_dump"), *params], check=True, capture_output=True, text=True
    ).stdout


def split_entries(text: str) -> list[tuple[str, str, str, str]]:
    """pg_dump's plain output as (name, type, owner, sql) entries, in pg_dump's order."""
    marks = list(ENTRY.finditer(text))
    out = []
    for k, m in enumerate(marks):
        end = marks[k + 1].start() if k + 1 < len(marks) else len(text)
        body = text[m.end() : end]
        body = re.sub(r"^(--|\\(un)?restrict ).*\n?", "", body, flags=re.M).strip()
        out.append((m.group(1), m.group(2), m.group(4), body))
    return out


class Catalogue:
    def __init__(self, conn: psycopg.Connection, old_plan: Path) -> None:
        self.conn = conn
        q = conn.execute
        cron = {c.split("/", 1)[1] for c in old_changes(old_plan) if c.startswith("cron/")}
        self.proc_change: dict[int, str] = {}
        self.func_names: dict[str, str] = {}
        self.procs: dict[str, list[tuple[int, str, str, str, str]]] = defaultdict(list)
        for oid, name, sig, lang, owner, src in q(
            "select p.oid, p.proname, p.oid::regprocedure::text, l.lanname,"
            "       pg_get_userbyid(p.proowner), p.prosrc"
            "  from pg_proc p join pg_language l on l.oid = p.prolang"
            " where p.pronamespace = 'pgflight'::regnamespace order by p.proname, p.oid::regprocedure::text"
        ).fetchall():
            folder = "cron" if name in cron else "internals" if name.startswith("_") else "functions"
            self.proc_change[oid] = self.func_names[name] = f"{folder}/{name}"
            self.procs[name].append((oid, sig, lang, owner, src))
        # relations: a partition, index or owned sequence belongs to its table's change
        rels = q(
            "select c.oid, c.relname, c.relkind,"
            "       (select i.inhparent from pg_inherits i where i.inhrelid = c.oid),"
            "       (select x.indrelid from pg_index x where x.indexrelid = c.oid),"
            "       (select d.refobjid from pg_depend d"
            "         where d.classid = 'pg_class'::regclass and d.objid = c.oid and c.relkind = 'S'"
            "           and d.refclassid = 'pg_class'::regclass and d.deptype in ('a', 'i'))"
            "  from pg_class c where c.relnamespace = 'pgflight'::regnamespace"
        ).fetchall()
        by_oid = {r[0]: r for r in rels}
        self.rel_change: dict[int, str] = {}
        self.rel_names: dict[str, int] = {}

        def root(oid: int) -> tuple[str, str]:
            _, name, kind, parent, table, owner = by_oid[oid]
            up = parent or table or owner
            if up and up in by_oid:
                return root(up)
            folder = {"v": "views", "S": "sequences"}.get(kind, "tables")
            return f"{folder}/{name}", kind

        self.relkind: dict[str, str] = {}
        for oid, name, *_ in rels:
            self.rel_change[oid], kind = root(oid)
            self.relkind[self.rel_change[oid]] = kind
            self.rel_names[name] = oid
        self.type_rel = dict(
            q(
                "select t.oid, coalesce(nullif(t.typrelid, 0), e.typrelid) from pg_type t"
                " left join pg_type e on e.oid = t.typelem"
                " where t.typnamespace = 'pgflight'::regnamespace"
            ).fetchall()
        )
        self.con_rel = dict(
            q(
                "select oid, conrelid from pg_constraint where connamespace = 'pgflight'::regnamespace"
            ).fetchall()
        )
        self.foreign_keys = dict(
            q(
                "select oid, (select relname from pg_class where oid = conrelid) || ' ' || conname"
                "  from pg_constraint where connamespace = 'pgflight'::regnamespace and contype = 'f'"
            ).fetchall()
        )
        self.def_rel = dict(q("select oid, adrelid from pg_attrdef").fetchall())
        # a foreign key's own triggers (internal) sit on both tables: its edge is the constraint's
        self.trg_rel = dict(q("select oid, tgrelid from pg_trigger where not tgisinternal").fetchall())
        self.rule_rel = dict(q("select oid, ev_class from pg_rewrite").fetchall())
        self.classes = dict(
            q(
                "select oid, relname from pg_class where oid in ('pg_class'::regclass, 'pg_proc'::regclass,"
                " 'pg_type'::regclass, 'pg_constraint'::regclass, 'pg_attrdef'::regclass,"
                " 'pg_trigger'::regclass, 'pg_rewrite'::regclass)"
            ).fetchall()
        )

    def change_of(self, classid: int, objid: int) -> str | None:
        kind = self.classes.get(classid)
        rel = {
            "pg_class": objid,
            "pg_type": self.type_rel.get(objid),
            "pg_constraint": self.con_rel.get(objid),
            "pg_attrdef": self.def_rel.get(objid),
            "pg_trigger": self.trg_rel.get(objid),
            "pg_rewrite": self.rule_rel.get(objid),
        }.get(kind or "")
        if kind == "pg_proc":
            return self.proc_change.get(objid)
        return self.rel_change.get(rel) if rel else None

    def depends(self) -> tuple[set[tuple[str, str]], set[tuple[str, str, str]]]:
        """
        (dependent change, referenced change) from pg_depend, and apart from them the foreign
        keys between tables as (table's change, referenced change, pg_dump's entry name).
        """
        out, fks = set(), set()
        for classid, objid, refclassid, refobjid in self.conn.execute(
            "select classid, objid, refclassid, refobjid from pg_depend where deptype in ('n', 'a', 'i')"
        ).fetchall():
            a, b = self.change_of(classid, objid), self.change_of(refclassid, refobjid)
            if a and b and a != b:
                if self.classes.get(classid) == "pg_constraint" and objid in self.foreign_keys:
                    fks.add((a, b, self.foreign_keys[objid]))
                else:
                    out.add((a, b))
        return out, fks

    def named(self, text: str) -> set[str]:
        """The changes of the pgflight names a function body mentions."""
        out = set()
        for name in set(re.findall(r"pgflight\.(\w+)", text)):
            if name in self.func_names:
                out.add(self.func_names[name])
            if name in self.rel_names:
                out.add(self.rel_change[self.rel_names[name]])
        return out


def entry_change(cat: Catalogue, name: str, kind: str) -> str | None:
    """The change a pg_dump entry belongs to, None for the schema's own entries."""
    if kind in ("SCHEMA",) or name == "SCHEMA pgflight":
        return None
    if kind in ("COMMENT", "ACL"):
        what, _, rest = name.partition(" ")
        if what in ("FUNCTION", "PROCEDURE"):
            return cat.func_names[rest.split("(")[0]]
        if what == "COLUMN":
            return cat.rel_change[cat.rel_names[rest.split(".")[0]]]
        if what == "CONSTRAINT":
            return cat.rel_change[cat.rel_names[rest.split(" ON ")[1]]]
        return cat.rel_change[cat.rel_names[rest.split()[0]]]
    if kind in ("FUNCTION", "PROCEDURE"):
        return cat.func_names[name.split("(")[0]]
    if kind in ("DEFAULT", "CONSTRAINT", "FK CONSTRAINT", "TRIGGER"):
        return cat.rel_change[cat.rel_names[name.split()[0]]]
    return cat.rel_change[cat.rel_names[name.split()[0]]]


# --- writing -----------------------------------------------------------------------------------


def order(
    changes: dict[str, Change], fks: set[tuple[str, str, str]]
) -> tuple[list[str], dict[str, set[str]]]:
    """
    Dependency order (hard edges always, soft ones where they make no cycle); requires. A foreign
    key that would close a cycle of tables moves to the change of the table it references.
    """
    edges: dict[str, set[str]] = {n: set() for n in changes}

    def reaches(a: str, b: str) -> bool:
        seen, todo = set(), [a]
        while todo:
            x = todo.pop()
            if x == b:
                return True
            if x not in seen:
                seen.add(x)
                todo.extend(edges[x])
        return False

    for n in sorted(changes):
        for d in sorted(changes[n].hard):
            if d in changes and d != n:
                edges[n].add(d)
    for a, b, entry in sorted(fks):
        if not reaches(b, a):
            edges[a].add(b)
            continue
        moved = [e for e in changes[a].entries if e[0] == "FK CONSTRAINT" and e[1] == entry]
        changes[a].entries = [e for e in changes[a].entries if e not in moved]
        changes[b].entries.extend(moved)
        if reaches(a, b):
            raise SystemExit(f"foreign key {entry} closes a cycle either way")
        edges[b].add(a)
    for strength in ("hard", "soft"):
        for n in sorted(changes):
            for d in sorted(getattr(changes[n], strength)):
                if d in changes and d != n and d not in edges[n]:
                    if reaches(d, n):
                        if strength == "hard":
                            raise SystemExit(f"dependency cycle through {n} and {d}")
                        continue
                    edges[n].add(d)
    done: list[str] = []
    placed: set[str] = set()
    key = lambda n: (RANK[n.split("/")[0]], n)  # noqa: E731
    waiting = sorted(changes, key=key)
    while waiting:
        ready = next(n for n in waiting if edges[n] <= placed)
        done.append(ready)
        placed.add(ready)
        waiting.remove(ready)
    # requires: the direct needs, less those another need already brings
    return done, edges


_ISSUE = r"[Ii]ssues? \d+(?:/\d+)*(?: case \d+)?"
_ORD = r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth)"


def _opening(m: re.Match[str]) -> str:
    lead, upper, named, first = m.group(1), m.group(2) == "I", m.group(3), m.group(4)
    if named:  # "<entry N> (retention): x" -> "Retention: x"
        return lead + named[:1].upper() + named[1:] + ": " + first
    return lead + (first.upper() if upper else first)


def reword(text: str) -> str:
    """
    The history references of the 0.9 plan's SQL (a tracker entry by its number, "case 1" of one,
    "the ninth session", a design document's section) in words: a parenthesis that only named
    the entry goes, one that went on keeps what followed; a sentence that opened with the
    reference opens with what followed it.
    """
    t = text
    t = re.sub(r"\), fixed\n(\s*)-- in the third session;", r"), since\n\1-- fixed;", t)
    t = re.sub(r"do\. Iss[u]e 18, ninth\n(\s*)-- session: their", r"do.\n\1-- Their", t)
    t = re.sub(rf",? {_ORD} session", "", t)
    t = re.sub(rf" ?\({_ISSUE}\)", "", t)
    # "(<entry N/M> claim cost: x" -> "(claim cost: x"; "(<entry N>: x" and "(<entry N>, x" -> "(x"
    t = re.sub(rf"\({_ISSUE}(?:[:;,](?: |$)| (?=[a-z]))", "(", t, flags=re.M)
    # "x, <entry N>)" and "x; <entry N>)" closing a parenthesis
    t = re.sub(rf"[;,] {_ISSUE}\)", ")", t)
    # "(which found them: <entry N>, it was" -> "(which found them: it was"
    t = re.sub(rf": {_ISSUE}, ", ": ", t)
    # a comment or sentence that opens with the reference
    t = re.sub(
        r"(^[ \t]*--[ \t]*|\. |--[ \t]+)([Ii])ssues? \d+(?:/\d+)*(?: case \d+)?(?: adds)?"
        r"(?: \(([^)]*)\))?[:,]? (\w)",
        _opening,
        t,
        flags=re.M,
    )
    return re.sub(r" ?\(DES" + r"IGN §[\d.]+\)", "", t)


def role_prelude(c: Change) -> str:
    owners = c.owners - {OWNER}
    if not owners:
        return f"set local role {OWNER};\n"
    (owner,) = owners
    sig = c.signatures[0]
    return f"""-- As {OWNER}, unless the functions are {owner}'s already ({PRIVILEGED}, a superuser's
-- deploy): then the deployer, a superuser as only one could hand them over, replaces them as
-- itself and they stay {owner}'s (CREATE OR REPLACE keeps the owner).
do $$
begin
  if (select pg_catalog.pg_get_userbyid(p.proowner) from pg_catalog.pg_proc p
       where p.oid = pg_catalog.to_regprocedure('{sig}')) is distinct from '{owner}' then
    perform pg_catalog.set_config('role', '{OWNER}', true);
  end if;
end
$$;
"""


def statement_sql(kind: str, body: str) -> str:
    body = re.sub(r"^ALTER \w+(?: \w+)? \S+(?:\(.*?\))? OWNER TO \w+;\n?", "", body, flags=re.M).strip()
    if kind in ("FUNCTION", "PROCEDURE"):
        body = re.sub(r"^CREATE (FUNCTION|PROCEDURE)", r"CREATE OR REPLACE \1", body)
    if kind == "VIEW":
        body = re.sub(r"^CREATE VIEW", "CREATE OR REPLACE VIEW", body)
    return body


def deploy_script(c: Change, docs: dict[str, str], seeds: dict[str, str]) -> str:
    parts = [f"-- Deploy pgflight:{c.name}", "begin;", role_prelude(c).rstrip()]
    base = c.name.split("/", 1)[1]
    documented = False
    for kind, _, body in c.entries:
        text = statement_sql(kind, body)
        if not text:
            continue
        if kind in ("FUNCTION", "PROCEDURE", "VIEW") and base in docs and not documented:
            text = docs[base] + "\n" + text
            documented = True
        parts.append(text)
    if base in EXTRA_SQL and c.name.startswith("tables/"):
        parts.append(EXTRA_SQL[base])
    if c.name.startswith("tables/") and base in seeds:
        parts.append(seeds[base])
    parts.append("commit;")
    return "\n\n".join(parts) + "\n"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def scratch_database(admin: str) -> str:
    name = f"rebaseline_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'create database "{name}"')
    return make_conninfo(admin, dbname=name)


def drop_database(admin: str, dsn: str) -> None:
    name = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'drop database "{name}" with (force)')


def seed_data(dsn: str, tables: list[str]) -> dict[str, str]:
    """INSERTs of the constant rows a deploy writes, per table."""
    out = {}
    for t in tables:
        text = dump(dsn, "--data-only", "--column-inserts", f"--table=pgflight.{t}")
        rows = [ln for ln in text.splitlines() if ln.startswith("INSERT INTO")]
        if rows:
            out[t] = "\n".join(rows)
    return out


def rebaseline(admin: str, tag: str, previous: str, source: str = "HEAD") -> None:
    plan = ROOT / "sqitch.plan"
    if any(ln.startswith(f"@{tag} ") for ln in plan_lines(plan)):
        raise SystemExit(f"sqitch.plan already has @{tag}")
    source_commit = sh("git", "rev-parse", source).strip()
    if sh("git", "show", f"{source_commit}:sqitch.plan") != plan.read_text():
        raise SystemExit(f"the plan of {source} is not this sqitch.plan: commit it, or name its commit")
    docs = {k: reword(v) for k, v in doc_comments(plan).items()}
    old = scratch_database(admin)
    try:
        migrate.deploy(old)
        with psycopg.connect(old, autocommit=True) as conn:
            cat = Catalogue(conn, plan)
            tables_with_rows = [
                t
                for (t,) in conn.execute(
                    "select c.relname from pg_class c where c.relnamespace = 'pgflight'::regnamespace"
                    " and c.relkind = 'r' and c.relname !~ '^events_[0-9]' order by 1"
                ).fetchall()
                if conn.execute(f"select exists (select from pgflight.{t})").fetchone() == (True,)
            ]
            constant = [t for t in tables_with_rows if t not in SEED_FROM_SCRIPT]
            seeds = seed_data(old, constant)
            constant_dump = "\n".join(seeds.values()) + "\n"
            for t in SEED_FROM_SCRIPT:
                script = (SQL / "deploy" / "tables" / f"{t}.sql").read_text()
                found = re.findall(rf"^insert into pgflight\.{t}\b.*?;$", script, flags=re.M | re.S)
                if not found:
                    raise SystemExit(f"no insert into pgflight.{t} in its deploy script")
                seeds[t] = "\n".join(found)
            text = dump(old, "--schema-only", "--exclude-table=pgflight.events_[0-9]*")
            changes: dict[str, Change] = {}
            reworded: list[str] = []  # the statements an upgraded 0.9 database runs for the words
            for name, kind, owner, body in split_entries(text):
                ch = entry_change(cat, name, kind)
                if ch is None:
                    continue
                if reword(body) != body:
                    if kind not in ("FUNCTION", "PROCEDURE", "COMMENT") or owner not in (OWNER, ""):
                        raise SystemExit(f"{kind} {name} ({owner}) names history: reword it by hand")
                    body = reword(body)
                    reworded.append(statement_sql(kind, body))
                c = changes.setdefault(ch, Change(ch))
                c.entries.append((kind, name, body))
                if kind in ("FUNCTION", "PROCEDURE"):
                    c.owners.add(owner)
            hard, fks = cat.depends()
            for a, b in hard:
                if a in changes:
                    changes[a].hard.add(b)
            for name, procs in cat.procs.items():
                c = changes[cat.func_names[name]]
                for _, sig, lang, _, src in procs:
                    c.signatures.append(sig)
                    (c.hard if lang == "sql" else c.soft).update(cat.named(src) - {c.name})
            old_dump = migrate.dump_schema(old)
    finally:
        drop_database(admin, old)

    names, edges = order(changes, fks)
    privileged = sorted(n for n, c in changes.items() if c.owners - {OWNER})
    bridge = SQL / "upgrade" / f"from-{previous}"
    # the bridge: the old plan, the scripts of its changes after its last tag, its dump
    if bridge.exists():
        shutil.rmtree(bridge)
    for change in after_last_tag(plan):
        for kind in ("deploy", "verify"):
            src = SQL / kind / f"{change}.sql"
            if src.exists():
                write(bridge / kind / f"{change}.sql", src.read_text())
    shutil.copy(plan, bridge / "sqitch.plan")
    write(bridge / "sqitch.conf", "[core]\n\tengine = pg\n\ttop_dir = .\n\tplan_file = sqitch.plan\n")
    write(bridge / "schema.dump.sql", old_dump)
    write(
        bridge / "reword.sql",
        "-- The 0.9 plan's functions and comments with their history references in words, as the\n"
        "-- new plan deploys them: run by pgflight migrate after the check against schema.dump.sql.\n"
        f"set local role {OWNER};\n\n" + "\n\n".join(reworded) + "\n\nreset role;\n",
    )
    write(bridge / "seed.dump.sql", constant_dump)
    write(bridge / "source_commit", source_commit + "\n")
    kinds = ("deploy", "revert", "verify")
    first = [n for n in old_changes(plan) if n.split("/")[0] not in GENERATED and n != PRIVILEGED]
    old_requires: dict[str, list[str]] = {}
    for ln in plan_lines(plan):
        m = re.match(r"(\S+) (?:\[(.*?)\] )?\d{4}-", ln)
        if m and m.group(1) in first and m.group(1) not in old_requires:
            old_requires[m.group(1)] = [r for r in (m.group(2) or "").split() if r in first]
    hand = {n: {k: reword((SQL / k / f"{n}.sql").read_text()) for k in kinds} for n in (*first, PRIVILEGED)}

    for kind in ("deploy", "revert", "verify"):
        shutil.rmtree(SQL / kind)
    for n, scripts in hand.items():
        for kind, text in scripts.items():
            write(SQL / kind / f"{n}.sql", text)
    for n in names:
        c = changes[n]
        write(SQL / "deploy" / f"{n}.sql", deploy_script(c, docs, seeds))
        base = n.split("/", 1)[1]
        if n.startswith(("tables/", "sequences/")):
            what = "table" if n.startswith("tables/") else "sequence"
            write(
                SQL / "revert" / f"{n}.sql",
                f"-- Revert pgflight:{n}\nbegin;\nset local role {OWNER};\n"
                f"drop {what} pgflight.{base};\ncommit;\n",
            )
            write(
                SQL / "verify" / f"{n}.sql",
                f"-- Verify pgflight:{n}\nselect 1 / (c.relkind in ('r', 'p', 'S'))::int"
                f" from pg_catalog.pg_class c where c.oid = 'pgflight.{base}'::regclass;\n",
            )

    stamp = "2026-12-08T00:00:00Z"
    note = {"tables": "table {}", "sequences": "sequence {}", "views": "view {}"}
    lines = ["%syntax-version=1.0.0", "%project=pgflight", "%uri=https://github.com/pgflight/pgflight", ""]
    notes = {
        "roles": "The four pgflight roles, created idempotently",
        "schema": "Schema pgflight owned by pgflight_owner",
        "cron_extension": "pg_cron where the server allows it",
        "roles/pgflight_cron": "The non-superuser role pg_cron runs pgflight's jobs as",
        "roles/owner_sets_replication_role": "pgflight_owner may set session_replication_role"
        " (a superuser's deploy)",
        PRIVILEGED: "pgflight_privileged owns the definer functions that need pg_read_all_stats or SET on"
        " session_replication_role",
    }
    for n in first:
        reqs = old_requires.get(n, [])
        lines.append(
            f"{n} {'[' + ' '.join(reqs) + '] ' if reqs else ''}{stamp} {PLANNER} # {notes.get(n, n)}"
        )
    for n in names:
        folder, base = n.split("/", 1)
        reqs = sorted(edges[n], key=names.index) or ["schema"]
        text = note.get(folder, "{}()").format(base)
        lines.append(f"{n} [{' '.join(reqs)}] {stamp} {PLANNER} # {text}")
    lines.append(f"{PRIVILEGED} [{' '.join(privileged)}] {stamp} {PLANNER} # {notes[PRIVILEGED]}")
    lines.append(
        f"@{tag} {stamp} {PLANNER} # pgflight {tag[1:]}: the re-baselined plan, one change per object"
    )
    plan.write_text("\n".join(lines) + "\n")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_sql_scripts.py")], check=True)

    new = scratch_database(admin)
    try:
        migrate.deploy(new)
        fresh = migrate.dump_schema(new)
        if fresh != reword(old_dump):
            (ROOT / "rebaseline.diff").write_text(
                "".join(
                    __import__("difflib").unified_diff(
                        reword(old_dump).splitlines(True), fresh.splitlines(True), "old plan", "new plan"
                    )
                )
            )
            raise SystemExit("the new plan's schema differs from the old plan's: see rebaseline.diff")
        write(SQL / "schema.dump.sql", fresh)
    finally:
        drop_database(admin, new)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tag", default="v1.0.0", help="the release the new plan's first tag names")
    ap.add_argument(
        "--previous", default="0.9", help="the release upgraded from (sql/upgrade/from-<previous>/)"
    )
    ap.add_argument(
        "--source-commit",
        default="HEAD",
        help="the commit holding the plan being replaced (the upgrade test deploys its release from it)",
    )
    args = ap.parse_args()
    external = os.environ.get("PGFLIGHT_TEST_DSN")
    folder = None if external else Path(tempfile.mkdtemp(prefix="pgflight-rebaseline-"))
    cluster = None
    try:
        if folder:
            os.chmod(folder, 0o755)
            cluster = Cluster(folder, settings={"fsync": "off"})
            cluster.up()
            admin = cluster.dsn("postgres")
        else:
            admin = make_conninfo(external, dbname="postgres")
        rebaseline(admin, args.tag, args.previous, args.source_commit)
    finally:
        if cluster:
            cluster.destroy()
        if folder:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
