#!/usr/bin/env python3
"""The gates of the MCP conformance tables, apart from the runs they judge.

    conformance_judge.py server --results DIR --list REVISION=FILE... --faces REVISION=FACE,...
                                --gaps FILE --table FILE
    conformance_judge.py cell DIR          # one client scenario's cell, from its checks.json

`server` writes docs/conformance.md's table from the suites' results (DIR/REVISION/FACE/
server-SCENARIO-TIMESTAMP/checks.json) and fails (exit 1, each reason on stderr) when:
- a revision's scenario list (the suite's own `list --server`, in FILE) is empty;
- a listed scenario has no result on a face that was run (the suite crashed or skipped it);
- a face does not pass a scenario, or passes fewer checks than direct (a check skipped there
  counts as not passed), unless the gaps file names it: `REVISION SCENARIO FACE REASON`;
- a gap that is named no longer is one (the face passes now): the gaps file must shrink.
Faces: direct, server (/mcp/{server}), merged (/mcp), stdio (mcp-stdio --server).
"""

import argparse
import json
import pathlib
import re
import sys

FACES = ["direct", "server", "merged", "stdio"]
PASSED = {"SUCCESS", "WARNING"}


def tally(checks, with_id=False, width=90):
    """(passed, counted, first failure) of a checks.json list; INFO checks do not count, a
    SKIPPED one counts as not passed. The failure text is cut at `width`, after its check's id
    when `with_id`."""
    counted = [c for c in checks if c.get("status") != "INFO"]
    passed = [c for c in counted if c.get("status") in PASSED]
    failures = [c for c in counted if c.get("status") not in PASSED]
    first = None
    if failures:
        f = failures[0]
        text = f.get("errorMessage") or f.get("description") or f.get("id") or ""
        if f.get("status") == "SKIPPED":
            text = "skipped: " + str(f.get("id") or text)
        elif with_id:
            text = f"{f.get('id') or ''}: {text}"
        first = re.sub(r"[|\n]", " ", str(text))[:width]
    return len(passed), len(counted), first


def cell(result):
    if result is None:
        return "✗ no result"
    passed, counted, first = result
    if counted == 0:
        return "— (no checks)"
    if passed == counted:
        return f"✓ {passed}/{counted}"
    return f"✗ {passed}/{counted}: {first}"


def server_result(face_dir, scenario):
    """The tally of `scenario` under `face_dir`, or None when it has no checks.json."""
    runs = sorted(face_dir.glob(f"server-{scenario}-20*/checks.json"))
    if not runs:
        return None
    return tally(json.loads(runs[-1].read_text()))


def parse_list(text):
    """Scenario names of a suite's `list --server` output, in order."""
    return [m.group(1) for m in re.finditer(r"^  - (\S+)", text, re.M)]


def load_gaps(path):
    gaps = {}
    for line in pathlib.Path(path).read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split(" ", 3)
        if len(parts) < 4 or parts[2] not in FACES:
            raise SystemExit(f"conformance gaps: malformed line: {line!r}")
        gaps[(parts[0], parts[1], parts[2])] = parts[3]
    return gaps


def judge_server(results, lists, faces, gaps):
    """(rows by revision, failures): each row (scenario, {face: cell text})."""
    failures = []
    rows = {}
    used = set()
    for revision, scenarios in lists.items():
        if not scenarios:
            failures.append(f"{revision}: the suite listed no server scenario")
        rows[revision] = []
        run = faces[revision]
        for scenario in scenarios:
            results_of = {f: server_result(results / revision / f, scenario) for f in run}
            direct = results_of["direct"]
            cells = {}
            for face in FACES:
                if face not in run:
                    cells[face] = "—"
                    continue
                result = results_of[face]
                passed = result is not None and result[1] > 0 and result[0] == result[1]
                text = cell(result)
                if face != "direct" and passed and (direct is None or result[0] < direct[0]):
                    # Every check it ran passed, but fewer than direct ran: some were skipped.
                    passed = False
                    text = f"✗ {result[0]}/{result[1]}: fewer checks than direct's {direct[0] if direct else 0}"
                key = (revision, scenario, face)
                if key in gaps:
                    used.add(key)
                    if passed:
                        failures.append(f"{scenario} ({revision}) passes on {face} now: remove its line from the gaps file")
                    else:
                        text = f"{text} (known: {gaps[key]})"
                elif not passed:
                    failures.append(f"{scenario} ({revision}) does not pass on {face}: {text}")
                cells[face] = text
            rows[revision].append((scenario, cells))
    for key in sorted(set(gaps) - used):
        failures.append(f"gaps file names {key[1]} ({key[0]}) on {key[2]}, which was not run: remove it")
    return rows, failures


HEADER = """# MCP conformance: direct and through the gateway

Produced by `scripts/conformance-table.sh` (run by `scripts/test.sh`, which fails when this file
is not what the run produced); do not edit by hand. Each cell is the scenario's checks that
passed (SUCCESS or WARNING) over those that counted (a SKIPPED check counts as not passed).
The scenarios are each suite's own `list --server`; a face passes a scenario when it passes
every check and as many as direct. Anything else fails CI unless `scripts/conformance-gaps.txt`
says why (shown here as "known").

- **direct**: test-support's `conformance-fixture` over its own streamable HTTP.
- **/mcp/{server}**: the same fixture run by BotCraft's manager over stdio, through `/mcp/fixture`.
- **/mcp merged**: the bot endpoint, where names are qualified (`fixture__test_simple_text`,
  `botcraft://fixture/test://static-text`); scenarios that call a fixed name cannot find it there,
  by design, and say so.
- **mcp-stdio --server**: `botcraft mcp-stdio --bot demo --server fixture` relaying to /mcp/fixture,
  behind supergateway 4.0.0 (stdio to streamable HTTP, stateful), since the suite speaks HTTP only;
  a failure in this column can be supergateway's (its own sessions and Host checks). Run for
  2025-11-25 only: supergateway does not speak the 2026-07-28 revision.

BotCraft as the *client* of the suite's servers (remote HTTP, OAuth): [conformance-client.md](conformance-client.md).
"""


def render(rows, versions):
    out = [HEADER]
    summary = []
    for revision, lines in rows.items():
        out.append(f"## Revision {revision} (conformance {versions.get(revision, '?')})\n")
        out.append("| scenario | direct | /mcp/{server} | /mcp merged | mcp-stdio --server |")
        out.append("|---|---|---|---|---|")
        passing = {f: 0 for f in FACES}
        for scenario, cells in lines:
            out.append(f"| {scenario} | " + " | ".join(cells[f] for f in FACES) + " |")
            for f in FACES:
                passing[f] += cells[f].startswith("✓")
        out.append("")
        summary.append(
            f"- Revision {revision} (conformance {versions.get(revision, '?')}): {len(lines)} scenarios; passing: "
            f"direct {passing['direct']}, /mcp/{{server}} {passing['server']}, /mcp {passing['merged']}, "
            f"mcp-stdio {passing['stdio']}"
        )
    out.append("## Summary\n")
    out.extend(summary)
    return "\n".join(out) + "\n"


def pairs(values, what):
    parsed = {}
    for value in values:
        key, _, rest = value.partition("=")
        if not rest:
            raise SystemExit(f"conformance judge: --{what} takes REVISION=VALUE, got {value!r}")
        parsed[key] = rest
    return parsed


def main(argv):
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    server = sub.add_parser("server")
    server.add_argument("--results", required=True, type=pathlib.Path)
    server.add_argument("--list", action="append", default=[], help="REVISION=FILE")
    server.add_argument("--faces", action="append", default=[], help="REVISION=FACE,FACE")
    server.add_argument("--version", action="append", default=[], help="REVISION=SUITE_VERSION")
    server.add_argument("--gaps", required=True)
    server.add_argument("--table", required=True, type=pathlib.Path)
    one = sub.add_parser("cell")
    one.add_argument("dir", type=pathlib.Path)
    args = parser.parse_args(argv)
    if args.command == "cell":
        runs = sorted(args.dir.rglob("checks.json"))
        checks = json.loads(runs[-1].read_text()) if runs else None
        print(cell(tally(checks, with_id=True, width=110)) if checks is not None else "✗ no result (the suite did not finish: see its log)")
        return 0
    lists = {rev: parse_list(pathlib.Path(f).read_text()) for rev, f in pairs(args.list, "list").items()}
    if not lists:
        print("conformance judge: no scenario list given", file=sys.stderr)
        return 1
    faces = {rev: f.split(",") for rev, f in pairs(args.faces, "faces").items()}
    for rev in lists:
        faces.setdefault(rev, ["direct"])
        if "direct" not in faces[rev]:
            faces[rev].insert(0, "direct")
    rows, failures = judge_server(args.results, lists, faces, load_gaps(args.gaps))
    args.table.write_text(render(rows, pairs(args.version, "version")))
    for failure in failures:
        print(f"conformance-table: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
