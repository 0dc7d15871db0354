"""Mutation testing of the modules where a silent bug costs most (mutmut 3).

    python -m tests.mutation core/textdiff.py          # one module (or several)
    python -m tests.mutation --changed main            # the listed modules a change touched (git diff main...)
    python -m tests.mutation --list                    # the modules and the tests that cover each
    REVIEWER_TEST_BACKENDS=falkordb,neo4j python -m tests.mutation core/_counters.py   # Neo4j too (slow)

Each module runs on its own: the tree (git's tracked and new files) is copied
to a scratch directory (``--keep DIR`` keeps it, to read its ``mutants/``
with ``mutmut show`` / ``mutmut browse`` there), ``[tool.mutmut]`` there gets
the module (``only_mutate``) and the tests that cover it (``COVERING``), and
``mutmut run`` mutates it and runs those tests against each mutant. It prints
every surviving mutant's diff and the score, killed / total. Core tests run on
the embedded FalkorDB only unless ``REVIEWER_TEST_BACKENDS`` says otherwise:
Neo4j multiplies the time by ten on a shared two-core machine. ``--jobs``
sets mutmut's worker count (default 1: the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: module -> the tests that cover it (what a mutant of it must fail)
COVERING: dict[str, list[str]] = {
    "core/textdiff.py": ["tests/core/test_textdiff.py", "tests/core/test_workbench.py"],
    "reviewer/access.py": ["tests/web/test_access.py", "tests/web/test_roles.py", "tests/web/test_management_scope.py"],
    "reviewer/oidc.py": ["tests/web/test_access.py", "tests/web/test_oidc.py"],
    "reviewer/api/tokens.py": ["tests/api/test_tokens.py", "tests/web/test_management_scope.py"],
    "core/stores/keystore.py": ["tests/core/test_redaction.py", "tests/core/test_retention.py"],
    "core/_counters.py": [
        "tests/core/test_counters.py",
        "tests/core/test_review_views.py",
        "tests/core/test_decisions.py",
    ],
    "core/_purge.py": ["tests/core/test_purge.py", "tests/core/test_redaction.py"],
    "core/stores/purge.py": ["tests/core/test_purge.py", "tests/core/test_redaction.py"],
    "core/_supports.py": [
        "tests/core/test_citations.py",
        "tests/core/test_decisions.py",
        "tests/core/test_workbench.py",
    ],
    "core/retention.py": ["tests/core/test_retention.py", "tests/core/test_redaction.py"],
    "reviewer/api/views.py": [
        "tests/api/test_endpoints.py",
        "tests/api/test_idempotency.py",
        "tests/api/test_tokens.py",
    ],
}


def changed_modules(base: str) -> list[str]:
    out = subprocess.run(
        ["git", "diff", "--name-only", f"{base}...HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    out += subprocess.run(
        ["git", "diff", "--name-only", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.split()
    return sorted(set(out) & set(COVERING))


def _copy_tree(dest: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    for name in files:
        src = ROOT / name
        if src.is_file() and not name.startswith("tests/neo4j_server/target"):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    target = ROOT / "tests/neo4j_server/target"
    if target.exists():  # the built Neo4j test server, linked rather than copied
        (dest / "tests/neo4j_server/target").symlink_to(target)


def _configure(dest: Path, module: str) -> None:
    text = (dest / "pyproject.toml").read_text()
    tests = COVERING[module]
    extra = f"only_mutate = [{json.dumps(module)}]\npytest_add_cli_args_test_selection = {json.dumps(tests)}\n"
    (dest / "pyproject.toml").write_text(re.sub(r"(\[tool\.mutmut\]\n)", r"\1" + extra, text, count=1))


def run_module(module: str, *, jobs: int, keep: Path | None) -> dict[str, int]:
    scratch = keep or Path(tempfile.mkdtemp(prefix="mutation-"))
    if keep:
        shutil.rmtree(keep, ignore_errors=True)
        keep.mkdir(parents=True)
    _copy_tree(scratch)
    _configure(scratch, module)
    env = {**os.environ, "REVIEWER_TEST_BACKENDS": os.environ.get("REVIEWER_TEST_BACKENDS", "falkordb")}
    mutmut = [sys.executable, "-m", "mutmut"]
    began = time.monotonic()
    print(f"== {module}: tests {', '.join(COVERING[module])} on {env['REVIEWER_TEST_BACKENDS']}", flush=True)
    subprocess.run([*mutmut, "run", "--max-children", str(jobs)], cwd=scratch, env=env, check=False)
    subprocess.run([*mutmut, "export-cicd-stats"], cwd=scratch, env=env, capture_output=True, check=False)
    stats_file = scratch / "mutants" / "mutmut-cicd-stats.json"
    stats = json.loads(stats_file.read_text()) if stats_file.exists() else {}
    listing = subprocess.run([*mutmut, "results"], cwd=scratch, env=env, capture_output=True, text=True).stdout
    survivors = [line.split(":")[0].strip() for line in listing.splitlines() if line.strip().endswith(": survived")]
    for name in survivors:
        shown = subprocess.run([*mutmut, "show", name], cwd=scratch, env=env, capture_output=True, text=True).stdout
        print(shown, flush=True)
    killed = stats.get("killed", 0) + stats.get("timeout", 0)
    total = stats.get("total", 0) - stats.get("skipped", 0)
    print(
        f"== {module}: {killed} / {total} killed, {stats.get('survived', 0)} survived, "
        f"{stats.get('no_tests', 0)} not covered, in {time.monotonic() - began:.0f} s"
        + (f" (kept in {scratch})" if keep else ""),
        flush=True,
    )
    if not keep:
        shutil.rmtree(scratch, ignore_errors=True)
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutation", description=__doc__.split("\n")[0])
    parser.add_argument("modules", nargs="*", help="modules to mutate (paths from the repository root)")
    parser.add_argument("--changed", metavar="BASE", help="the listed modules changed since BASE (git diff)")
    parser.add_argument("--list", action="store_true", help="the modules and their covering tests")
    parser.add_argument("--jobs", type=int, default=1, help="mutmut workers (default 1)")
    parser.add_argument("--keep", type=Path, help="keep the scratch tree here (one module)")
    args = parser.parse_args(argv)
    if args.list:
        for module, tests in COVERING.items():
            print(f"{module}: {' '.join(tests)}")
        return 0
    modules = list(args.modules)
    if args.changed:
        modules += changed_modules(args.changed)
    unknown = [m for m in modules if m not in COVERING]
    if unknown or not modules:
        parser.error(f"name modules of: {', '.join(COVERING)}" + (f" (not {', '.join(unknown)})" if unknown else ""))
    if args.keep and len(modules) > 1:
        parser.error("--keep takes one module")
    survived = 0
    for module in dict.fromkeys(modules):
        survived += run_module(module, jobs=args.jobs, keep=args.keep).get("survived", 0)
    return 1 if survived else 0


if __name__ == "__main__":
    raise SystemExit(main())
