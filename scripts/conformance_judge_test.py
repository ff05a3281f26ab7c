#!/usr/bin/env python3
"""The conformance gates fail on a broken run (python3 scripts/conformance_judge_test.py):
a crashed direct run, an empty scenario list, a face that skips a check direct ran, a stale
gap, and a docs table that is not what the run produced each fail; a gap named with its
reason passes."""

import json
import pathlib
import subprocess
import sys
import tempfile
import unittest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import conformance_judge as judge  # noqa: E402

LIST = "Server scenarios (test against a server):\n  - ping [2025-11-25]\n  - tools-list [2025-11-25]\n"


def checks(*statuses):
    return [{"id": f"c{i}", "status": s, "errorMessage": f"check {i} {s}"} for i, s in enumerate(statuses)]


class Run:
    """A results folder as the suites leave it."""

    def __init__(self, root):
        self.root = pathlib.Path(root)

    def put(self, face, scenario, statuses, revision="2025-11-25"):
        folder = self.root / "results" / revision / face / f"server-{scenario}-2026-12-04T10-00-00"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "checks.json").write_text(json.dumps(checks(*statuses)))

    def judge(self, listing=LIST, gaps="", faces="direct,server"):
        (self.root / "list.txt").write_text(listing)
        (self.root / "gaps.txt").write_text(gaps)
        table = self.root / "table.md"
        args = [
            "server", "--results", str(self.root / "results"),
            "--list", f"2025-11-25={self.root / 'list.txt'}",
            "--faces", f"2025-11-25={faces}", "--version", "2025-11-25=0.1.16",
            "--gaps", str(self.root / "gaps.txt"), "--table", str(table),
        ]
        return judge.main(args), table.read_text()


class Gates(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.run = Run(self.dir.name)

    def tearDown(self):
        self.dir.cleanup()

    def healthy(self):
        for face in ["direct", "server"]:
            self.run.put(face, "ping", ["SUCCESS"])
            self.run.put(face, "tools-list", ["SUCCESS", "SUCCESS", "INFO"])

    def test_a_healthy_run_passes_and_writes_the_table(self):
        self.healthy()
        code, table = self.run.judge()
        self.assertEqual(code, 0)
        self.assertIn("| tools-list | ✓ 2/2 | ✓ 2/2 | — | — |", table)
        self.assertIn("passing: direct 2, /mcp/{server} 2", table)

    def test_a_crashed_direct_run_fails(self):
        self.run.put("server", "ping", ["SUCCESS"])
        self.run.put("server", "tools-list", ["SUCCESS"])
        code, table = self.run.judge()
        self.assertEqual(code, 1)
        self.assertIn("| ping | ✗ no result |", table)

    def test_an_empty_scenario_list_fails(self):
        self.healthy()
        code, _ = self.run.judge(listing="Server scenarios (test against a server):\n")
        self.assertEqual(code, 1)

    def test_a_face_that_skips_a_check_direct_ran_fails(self):
        self.run.put("direct", "ping", ["SUCCESS"])
        self.run.put("server", "ping", ["SUCCESS"])
        self.run.put("direct", "tools-list", ["SUCCESS", "SUCCESS"])
        self.run.put("server", "tools-list", ["SUCCESS", "SKIPPED"])
        code, table = self.run.judge()
        self.assertEqual(code, 1)
        self.assertIn("✗ 1/2: skipped: c1", table)
        # Dropped altogether rather than skipped: fewer checks than direct.
        self.run.put("server", "tools-list", ["SUCCESS"])
        code, table = self.run.judge()
        self.assertEqual(code, 1)
        self.assertIn("fewer checks than direct's 2", table)

    def test_a_named_gap_passes_and_a_stale_one_fails(self):
        self.healthy()
        self.run.put("server", "ping", ["FAILURE"])
        code, table = self.run.judge(gaps="2025-11-25 ping server the bridge answers ping itself\n")
        self.assertEqual(code, 0)
        self.assertIn("(known: the bridge answers ping itself)", table)
        self.run.put("server", "ping", ["SUCCESS"])
        code, _ = self.run.judge(gaps="2025-11-25 ping server the bridge answers ping itself\n")
        self.assertEqual(code, 1)

    def test_an_unknown_failure_on_any_face_fails(self):
        self.healthy()
        self.run.put("merged", "ping", ["SUCCESS"])
        self.run.put("merged", "tools-list", ["SUCCESS", "FAILURE"])
        code, _ = self.run.judge(faces="direct,server,merged")
        self.assertEqual(code, 1)

    def test_a_stale_docs_table_fails_the_comparison_test_sh_makes(self):
        self.healthy()
        code, table = self.run.judge()
        self.assertEqual(code, 0)
        committed = pathlib.Path(self.dir.name) / "committed.md"
        committed.write_text(table.replace("✓ 2/2", "✓ 3/3", 1))
        diff = subprocess.run(["diff", "-u", str(committed), str(pathlib.Path(self.dir.name) / "table.md")],
                              capture_output=True)
        self.assertNotEqual(diff.returncode, 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
