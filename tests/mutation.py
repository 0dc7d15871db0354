"""Mutation testing of the modules where a silent bug costs most (mutmut 3).

    python -m tests.mutation core/textdiff.py          # one module (or several)
    python -m tests.mutation --changed main            # the listed modules a change touched (git diff main...)
    python -m tests.mutation --list                    # the modules and the tests that cover each
    python -m tests.mutation core/retention.py --sample 40   # 40 of its mutants, drawn at random (--seed)
    REVIEWER_TEST_BACKENDS=falkordb,neo4j python -m tests.mutation core/_counters.py   # Neo4j too (slow)

Each module runs on its own: the tree (git's tracked and new files) is copied
to a scratch directory (``--keep DIR`` keeps it, to read its ``mutants/``
with ``mutmut show`` / ``mutmut browse`` there), ``[tool.mutmut]`` there gets
the module (``only_mutate``) and the tests that cover it (``COVERING``), and
``mutmut run`` mutates it and runs those tests against each mutant. It prints
every surviving mutant's diff and the score, killed / total. Core tests run on
the embedded FalkorDB only unless ``REVIEWER_TEST_BACKENDS`` says otherwise:
Neo4j multiplies the time by ten on a shared two-core machine. ``--jobs``
sets mutmut's worker count (default 1: the machine is shared). ``--sample N``
runs N of the module's mutants drawn at random (the same N for the same
``--seed``): a module of a thousand mutants takes hours on two shared cores,
and a sample's score estimates the whole's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
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
    # (not tests/core/test_keystore_binding.py: its tests start Python processes of their own, which
    # cannot import mutmut's copy of the code)
    "core/stores/keystore.py": ["tests/core/test_redaction.py", "tests/core/test_retention.py"],
    "core/_counters.py": [
        "tests/core/test_counters.py",
        "tests/core/test_review_views.py",
        "tests/core/test_decisions.py",
    ],
    "core/_purge.py": [
        "tests/core/test_purge.py",
        "tests/core/test_redaction.py",
        "tests/core/test_purge_triggers.py",
        "tests/core/test_request_records.py",
    ],
    "core/stores/purge.py": [
        "tests/core/test_purge.py",
        "tests/core/test_redaction.py",
        "tests/core/test_purge_triggers.py",
    ],
    "core/_supports.py": [
        "tests/core/test_citations.py",
        "tests/core/test_decisions.py",
        "tests/core/test_workbench.py",
        "tests/core/test_limits.py",
        "tests/core/test_find_nearest.py",
    ],
    "core/retention.py": [
        "tests/core/test_retention.py",
        "tests/core/test_redaction.py",
        "tests/core/test_limits.py",
        "tests/core/test_purge_triggers.py",
        "tests/core/test_copies.py",
    ],
    "reviewer/api/views.py": [
        "tests/api/test_endpoints.py",
        "tests/api/test_idempotency.py",
        "tests/api/test_tokens.py",
        "tests/api/test_limits.py",
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


def mutant_names(module: str) -> list[str]:
    """Every mutant mutmut makes of ``module``, by the name ``mutmut run`` takes."""
    from mutmut.mutation.file_mutation import mutate_file_contents

    dotted = module.removesuffix(".py").replace("/", ".")
    made = mutate_file_contents(module, (ROOT / module).read_text())
    return [f"{dotted}.{name}" for name in made.mutant_names]


def _statuses(scratch: Path, env: dict[str, str]) -> dict[str, str]:
    """Each mutant run so far: its status (killed, survived, timeout, no tests, not checked, ...)."""
    mutmut = [sys.executable, "-m", "mutmut"]
    listing = subprocess.run(
        [*mutmut, "results", "--all", "true"], cwd=scratch, env=env, capture_output=True, text=True
    ).stdout
    found = {}
    for line in listing.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep:
            found[name] = status
    return found


def run_module(
    module: str, *, jobs: int, keep: Path | None, sample: int | None = None, seed: int = 1
) -> dict[str, int]:
    scratch = keep or Path(tempfile.mkdtemp(prefix="mutation-"))
    if keep:
        shutil.rmtree(keep, ignore_errors=True)
        keep.mkdir(parents=True)
    _copy_tree(scratch)
    _configure(scratch, module)
    env = {**os.environ, "REVIEWER_TEST_BACKENDS": os.environ.get("REVIEWER_TEST_BACKENDS", "falkordb")}
    mutmut = [sys.executable, "-m", "mutmut"]
    began = time.monotonic()
    names = mutant_names(module)
    chosen = sorted(random.Random(seed).sample(names, sample)) if sample and sample < len(names) else []
    print(
        f"== {module}: {len(chosen) or len(names)} of its {len(names)} mutants; tests {', '.join(COVERING[module])} "
        f"on {env['REVIEWER_TEST_BACKENDS']}",
        flush=True,
    )
    subprocess.run([*mutmut, "run", "--max-children", str(jobs), *chosen], cwd=scratch, env=env, check=False)
    statuses = _statuses(scratch, env)
    if chosen:
        statuses = {name: statuses.get(name, "not checked") for name in chosen}
    counts: dict[str, int] = {}
    for status in statuses.values():
        counts[status] = counts.get(status, 0) + 1
    survivors = sorted(name for name, status in statuses.items() if status == "survived")
    for name in survivors:
        shown = subprocess.run([*mutmut, "show", name], cwd=scratch, env=env, capture_output=True, text=True).stdout
        print(shown, flush=True)
    run = sum(n for status, n in counts.items() if status not in ("not checked", "skipped"))
    killed = counts.get("killed", 0) + counts.get("timeout", 0)
    print(
        f"== {module}: {killed} / {run} killed ({counts.get('timeout', 0)} timed out), "
        f"{counts.get('survived', 0)} survived, {counts.get('no tests', 0)} not covered"
        + (f", a sample of {len(chosen)} of {len(names)} (seed {seed})" if chosen else f" of {len(names)}")
        + f", in {time.monotonic() - began:.0f} s"
        + (f" (kept in {scratch})" if keep else ""),
        flush=True,
    )
    stats = {"killed": killed, "survived": counts.get("survived", 0), "total": run}
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
    parser.add_argument("--sample", type=int, metavar="N", help="run N of each module's mutants, drawn at random")
    parser.add_argument("--seed", type=int, default=1, help="the sample's seed (default 1)")
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
        survived += run_module(module, jobs=args.jobs, keep=args.keep, sample=args.sample, seed=args.seed).get(
            "survived", 0
        )
    return 1 if survived else 0


if __name__ == "__main__":
    raise SystemExit(main())
