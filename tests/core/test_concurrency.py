"""Several processes against one store, on each backend: agents writing
events and decisions, a reviewer settling the queue and revising the cited
document, a sweep continuing the review. Afterwards every kept counter and
number equals a direct count, no number was given twice, and everything the
writers were told was recorded is there.

Each process opens the store from its url, as a server worker would; they
run for a bounded time (``SECONDS``), so the test costs the same however
fast the machine is.
"""

from __future__ import annotations

import multiprocessing
import random
import time
import traceback
import uuid
from typing import Any

import pytest

from core import _common as c
from core import _counters
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph, document_node_id
from core.stores import GraphStore, GraphStoreError, open_store

SECONDS = 20.0
GRACE = 90.0
# enough queue positions seen for "none given twice" to mean something; a
# busy machine gives fewer in the time (exactly 20 was seen at load 15)
POSITIONS = 12
AGENTS = 2
POLICY = "Every service keeps its data in Postgres.\n\nBackups run nightly."


def _ready(start: Any, out: Any) -> float:
    """Say this process is up and wait for the others: the clock starts
    once every process has its store open (spawning is slow on a busy
    machine). Returns when to stop."""
    go, until = start
    out.put(("ready", 0, {}))
    go.wait(timeout=300)
    return until.value


def _going(until: float, enough: bool) -> bool:
    """Go on until the time is up, and on a machine so busy that this
    process has not done its share of the race by then, until it has (at
    most ``GRACE`` more seconds)."""
    now = time.time()
    return now < until or (not enough and now < until + GRACE)


def _agent(url: str, project: str, n: int, start: Any, out: Any) -> None:
    """Events on its own task and on the shared one (racing the other agent
    for numbers), decisions that cite events, the document and each other,
    and supersessions of its own decisions."""
    acked: dict[str, Any] = {"events": [], "decisions": [], "errors": 0}
    rnd = random.Random(n)
    try:
        store = open_store(url)
        history = ConversationHistory(store, project_id=project, agent_id=f"agent-{n}")
        traces = DecisionTraces(store, project_id=project, agent_id=f"agent-{n}")
        graph = Graph(store, project_id=project, agent_id=f"agent-{n}")
        mine: list[str] = []
        i = 0
        until = _ready(start, out)
        while _going(until, i >= 12):
            i += 1
            try:
                task = rnd.choice([f"own-{n}", "shared"])
                payload = f"agent {n} event {i}"
                result = history.record_event(task, kind="note", payload=payload, request_id=f"a{n}-e{i}")
                if result.recorded:
                    acked["events"].append((task, result.event.seq, str(result.event.id), payload))
                if i % 3 == 0:
                    supports: list[dict[str, Any]] = [{"kind": "event", "task_name": task, "seq": 1}]
                    if mine:
                        supports.append({"kind": "decision", "decision_id": rnd.choice(mine)})
                    made = traces.record_decision(
                        f"own-{n}",
                        # some keys every agent decides, differently: conflicts come and go
                        choice_key=f"contested-{i // 6 % 3}" if i % 6 == 0 else f"a{n}-choice-{i}",
                        conclusion=f"option {i % 2}" if i % 6 else f"agent {n}'s option",
                        rationale="concurrency",
                        supports=supports,
                        request_id=f"a{n}-d{i}",
                    )
                    if made.recorded:
                        mine.append(str(made.decision.id))
                        acked["decisions"].append(str(made.decision.id))
                if i % 7 == 0:
                    # the current version: the reviewer keeps revising it
                    cite = {"kind": "document", "evidence_id": graph.span_evidence_id("policy", 0, 27)}
                    loaded = traces.load_decisions(
                        [
                            {
                                "task_name": "shared",
                                "choice_key": f"a{n}-doc-{i}-{k}",
                                "conclusion": "Postgres",
                                "rationale": "the policy",
                                "supports": [cite] + ([{"kind": "decision", "decision_id": mine[-1]}] if mine else []),
                            }
                            for k in range(3)
                        ]
                    )
                    acked["decisions"] += [str(d.id) for d in loaded]
                    mine += [str(d.id) for d in loaded]
                if i % 5 == 0 and mine:
                    target = rnd.choice(mine)
                    new = traces.supersede_decision(
                        target,
                        conclusion=f"revised {i}",
                        rationale="concurrency",
                        explanation="a second thought",
                        supports=[{"kind": "event", "task_name": f"own-{n}", "seq": 1}],
                        request_id=f"a{n}-s{i}",
                    )
                    if new.recorded:
                        mine.remove(target)
                        mine.append(str(new.decision.id))
                        acked["decisions"].append(str(new.decision.id))
            except (GraphStoreError, ValueError) as exc:
                # not acknowledged, so nothing to find afterwards (a batch
                # citing a decision the reviewer just rejected is refused)
                acked["errors"] += 1
                acked.setdefault("kinds", set()).add(f"{type(exc).__name__}: {str(exc)[:60]}")
        store.close()
    except Exception:
        acked["crash"] = traceback.format_exc()
    out.put(("agent", n, acked))


def _reviewer(url: str, project: str, start: Any, out: Any) -> None:
    """Settles the head of the queue (rejects and reaffirms) and revises the
    cited document, which flags what cites it."""
    done: dict[str, Any] = {"rejected": [], "reaffirmed": 0, "revisions": 0, "errors": 0}
    rnd = random.Random(99)
    try:
        store = open_store(url)
        traces = DecisionTraces(store, project_id=project, agent_id="reviewer")
        graph = Graph(store, project_id=project, agent_id="reviewer")
        i = 0
        until = _ready(start, out)
        revised = time.time()
        while _going(until, done["revisions"] >= 1 and len(done["rejected"]) >= 1):
            i += 1
            try:
                if time.time() - revised > 1.5:
                    graph.update("policy", POLICY + f"\n\nRevision {i}.")
                    revised = time.time()
                    done["revisions"] += 1
                page = traces.list_decisions_for_review(limit=10).decisions
                for d in page[:3]:
                    if rnd.random() < 0.5:
                        if traces.reject_decision(str(d.id), reason="no").recorded:
                            done["rejected"].append(str(d.id))
                    elif traces.reaffirm_decision(str(d.id)).recorded:
                        done["reaffirmed"] += 1
            except GraphStoreError:
                done["errors"] += 1
        store.close()
    except Exception:
        done["crash"] = traceback.format_exc()
    out.put(("reviewer", 0, done))


def _sweeper(url: str, project: str, start: Any, out: Any) -> None:
    """Continues the review, and after each step notes every queue position
    in use: a position two decisions held is one given twice, even if the
    queue is empty at the end."""
    done: dict[str, Any] = {"moved": 0, "errors": 0, "positions": 0, "twice": []}
    holder: dict[int, str] = {}
    try:
        store = open_store(url)
        traces = DecisionTraces(store, project_id=project, agent_id="sweep")
        until = _ready(start, out)
        while _going(until, done["moved"] >= 1 and done["positions"] >= POSITIONS):
            try:
                step = traces.continue_decision_review(limit=50)
                done["moved"] += step.moved
                for r in store.read(
                    project,
                    "MATCH (d:Decision) WHERE d.project_id = $p AND d.queue_pos IS NOT NULL "
                    "RETURN d.id AS id, d.queue_pos AS pos",
                    {"p": project},
                ):
                    if holder.setdefault(r["pos"], r["id"]) != r["id"]:
                        done["twice"].append((r["pos"], holder[r["pos"]], r["id"]))
                done["positions"] = len(holder)
                if not step.moved:
                    time.sleep(0.05)
            except GraphStoreError:
                done["errors"] += 1
        store.close()
    except Exception:
        done["crash"] = traceback.format_exc()
    out.put(("sweep", 0, done))


def _direct(store: GraphStore, project: str) -> dict[str, int]:
    """The queue's counters, counted from its decisions."""
    rows = store.read(
        project,
        "MATCH (d:Decision) WHERE d.project_id = $p AND d.review_open = true "
        "RETURN count(d) AS open, "
        "sum(CASE WHEN d.review_state = 'needs_review' THEN 1 ELSE 0 END) AS needs_review, "
        "sum(CASE WHEN d.review_state = 'unknown' THEN 1 ELSE 0 END) AS unknown, "
        "sum(CASE WHEN d.queued = true THEN 1 ELSE 0 END) AS queued",
        {"p": project},
    )
    return {k: int(rows[0][k] or 0) for k in _counters.COUNTERS}


def _direct_causes(store: GraphStore, project: str) -> list[tuple[str, int]]:
    """Each root cause's decisions in the queue, counted, most first."""
    rows = store.read(
        project,
        "MATCH (d:Decision) WHERE d.project_id = $p AND d.review_open = true "
        "RETURN coalesce(d.root_cause, '') AS cause, count(d) AS n",
        {"p": project},
    )
    return sorted(((r["cause"], r["n"]) for r in rows), key=lambda kv: (-kv[1], kv[0]))


def _direct_conflicts(store: GraphStore, project: str) -> int:
    return store.read(
        project,
        "MATCH (ch:Choice) WHERE ch.project_id = $p AND ch.conflict = true RETURN count(ch) AS n",
        {"p": project},
    )[0]["n"]


def seed_race(store: GraphStore, project_id: str, agents: int = AGENTS) -> list[Any]:
    """The race's starting store: the tasks, the policy, ten roots citing
    it and ten decisions built on them, every counter counted."""
    history = ConversationHistory(store, project_id=project_id, agent_id="setup")
    graph = Graph(store, project_id=project_id, agent_id="setup")
    traces = DecisionTraces(store, project_id=project_id, agent_id="setup")
    for task in ["shared", *(f"own-{n}" for n in range(agents))]:
        history.create_task(task, goal="race")
        history.record_event(task, kind="note", payload="first")
    graph.add("policy", POLICY)
    cite = {"kind": "document", "evidence_id": graph.span_evidence_id("policy", 0, 27)}
    roots = traces.load_decisions(
        [
            {
                "task_name": "shared",
                "choice_key": f"root-{k}",
                "conclusion": "Postgres",
                "rationale": "policy",
                "supports": [cite],
            }
            for k in range(10)
        ]
    )
    # what depends on them is queued when the reviewer revises the policy
    roots += traces.load_decisions(
        [
            {
                "task_name": "shared",
                "choice_key": f"built-on-{k}",
                "conclusion": "a replica",
                "rationale": "on the root",
                "supports": [
                    {"kind": "event", "task_name": "shared", "seq": 1},
                    {"kind": "decision", "decision_id": str(r.id)},
                ],
            }
            for k, r in enumerate(roots)
        ]
    )
    return roots


def run_race(url: str, project_id: str, agents: int = AGENTS, seconds: float = SECONDS) -> list[Any]:
    """The agents, the reviewer and the sweep, each a process of its own,
    for ``seconds`` once all are up; what each reported."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start = (ctx.Event(), ctx.Value("d", 0.0))
    procs = [ctx.Process(target=_agent, args=(url, project_id, n, start, out)) for n in range(agents)]
    procs.append(ctx.Process(target=_reviewer, args=(url, project_id, start, out)))
    procs.append(ctx.Process(target=_sweeper, args=(url, project_id, start, out)))
    for p in procs:
        p.start()
    for _ in procs:
        role, _n, r = out.get(timeout=300)
        assert role == "ready", r
    start[1].value = time.time() + seconds
    start[0].set()
    results = [out.get(timeout=seconds + GRACE + 180) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return results


def counter_mismatches(store: GraphStore, project_id: str, tasks: list[str]) -> tuple[int, list[str]]:
    """Every kept counter and number against a direct count: how many were
    compared, and each that differs. The root causes are compared whole
    (each cause's kept count, however many causes the queue holds)."""
    checked = 0
    wrong: list[str] = []

    def same(what: str, kept: Any, direct: Any) -> None:
        nonlocal checked
        checked += 1
        if kept != direct:
            wrong.append(f"{what}: kept {kept!r}, counted {direct!r}")

    kept = _counters.kept_counts(store, project_id)
    for k, v in _direct(store, project_id).items():
        same(f"queue {k}", kept[k], v)
    direct_causes = dict(_direct_causes(store, project_id))
    kept_causes = dict(_counters.top_causes(store, project_id, len(direct_causes) + 1000))
    for cause in sorted(set(direct_causes) | set(kept_causes)):
        same(f"cause {cause}", kept_causes.get(cause, 0), direct_causes.get(cause, 0))
    same("conflicts", _counters.conflict_count(store, project_id), _direct_conflicts(store, project_id))
    for task in tasks:
        tid = c.task_id(project_id, task)
        state = _counters.task_state(store, project_id, tid)
        direct = store.read(
            project_id,
            "MATCH (d:Decision {task_id: $t}) RETURN "
            "sum(CASE WHEN d.status = 'active' THEN 1 ELSE 0 END) AS active, "
            "sum(CASE WHEN d.review_open = true THEN 1 ELSE 0 END) AS open, max(d.active_seq) AS top",
            {"t": tid},
        )[0]
        same(f"task {task} active", state["active"], direct["active"] or 0)
        same(f"task {task} open", state["open"], direct["open"] or 0)
        same(f"task {task} seq >= top", True, state["seq"] >= (direct["top"] or 0))
    # each version of the policy: its kept count of citers is the decisions
    # citing it, each with one place, none given twice (core._citations)
    doc = document_node_id(project_id, "policy")
    edges = store.read(
        project_id,
        "MATCH (doc:Document {id: $id})<-[r:CITES_DOC]-(d:Decision) RETURN d.id AS d, r.seq AS seq, r.pos AS pos",
        {"id": doc},
    )
    for v in store.read(
        project_id,
        "MATCH (v:DocVersion {document_id: $id}) RETURN v.activation_seq AS seq, v.cite_last AS last, v.citers AS n",
        {"id": doc},
    ):
        places = [e["pos"] for e in edges if e["seq"] == v["seq"] and e["pos"] is not None]
        citers = {e["d"] for e in edges if e["seq"] == v["seq"]}
        same(f"policy v{v['seq']} citers", v["n"], len(citers))
        same(f"policy v{v['seq']} places", (len(places), len(set(places))), (len(citers), len(citers)))
        same(f"policy v{v['seq']} places within last", True, all(1 <= p <= v["last"] for p in places))
    return checked, wrong


def test_processes_racing_keep_every_counter_and_number_exact(store: GraphStore, project_id: str) -> None:
    history = ConversationHistory(store, project_id=project_id, agent_id="setup")
    roots = seed_race(store, project_id)
    assert _counters.kept_counts(store, project_id) == _direct(store, project_id)  # counted from the start
    # the root causes' group sizes and the conflicts' count, kept from here on
    assert _counters.top_causes(store, project_id, 200) == _direct_causes(store, project_id)
    assert _counters.conflict_count(store, project_id) == _direct_conflicts(store, project_id)

    results = run_race(store.url, project_id)
    by_role: dict[str, list[dict[str, Any]]] = {}
    for role, _n, r in results:
        assert "crash" not in r, r["crash"]
        by_role.setdefault(role, []).append(r)
    agents = by_role["agent"]
    events = [e for a in agents for e in a["events"]]
    decisions = [d for a in agents for d in a["decisions"]] + [str(d.id) for d in roots]
    # the race happened: both agents wrote, the reviewer settled, the sweep moved
    summary = {
        role: [{k: (len(v) if isinstance(v, list) else v) for k, v in r.items()} for r in rs]
        for role, rs in by_role.items()
    }
    print(summary)
    assert all(len(a["events"]) >= 8 and a["decisions"] for a in agents), summary
    assert by_role["reviewer"][0]["rejected"] and by_role["reviewer"][0]["revisions"], summary
    assert by_role["sweep"][0]["moved"], summary

    # everything acknowledged is there, as acknowledged
    for task, seq, eid, payload in events:
        got = history.list_events(task, after_seq=seq - 1, limit=1).events
        assert got and str(got[0].id) == eid and got[0].payload == payload, (task, seq)
    found = store.read(
        project_id, "UNWIND $ids AS id MATCH (d:Decision {id: id}) RETURN count(d) AS n", {"ids": decisions}
    )[0]["n"]
    assert found == len(set(decisions))
    # no number given twice, none skipped
    for task in ["shared", *(f"own-{n}" for n in range(AGENTS))]:
        tid = c.task_id(project_id, task)
        seqs = [
            r["seq"] for r in store.read(project_id, "MATCH (e:Event {task_id: $t}) RETURN e.seq AS seq", {"t": tid})
        ]
        last = store.read(project_id, "MATCH (t:Task {id: $t}) RETURN t.event_seq AS n", {"t": tid})[0]["n"]
        assert sorted(seqs) == list(range(1, last + 1)), task
    positions = [
        r["pos"]
        for r in store.read(
            project_id,
            "MATCH (d:Decision) WHERE d.project_id = $p AND d.queue_pos IS NOT NULL RETURN d.queue_pos AS pos",
            {"p": project_id},
        )
    ]
    assert len(positions) == len(set(positions))
    sweep = by_role["sweep"][0]
    assert sweep["positions"] >= POSITIONS and not sweep["twice"], sweep
    numbered = store.read(
        project_id,
        "MATCH (d:Decision) WHERE d.project_id = $p AND d.active_seq IS NOT NULL "
        "RETURN d.task_id AS tid, d.active_seq AS seq",
        {"p": project_id},
    )
    assert len(numbered) == len({(r["tid"], r["seq"]) for r in numbered})
    # ... nor a queue position, and a decision has one exactly while it is in the queue
    positions = store.read(
        project_id,
        "MATCH (d:Decision) WHERE d.project_id = $p AND (d.review_open = true OR d.queue_pos IS NOT NULL) "
        "RETURN d.queue_pos AS pos, coalesce(d.review_open, false) AS open",
        {"p": project_id},
    )
    assert all(r["open"] and r["pos"] is not None for r in positions)
    assert len(positions) == len({r["pos"] for r in positions})

    # every kept counter equals a direct count
    tasks = ["shared", *(f"own-{n}" for n in range(AGENTS))]
    checked, wrong = counter_mismatches(store, project_id, tasks)
    assert checked > 20 and not wrong, wrong
    doc = document_node_id(project_id, "policy")
    versions = store.read(project_id, "MATCH (v:DocVersion {document_id: $id}) RETURN v.citers AS n", {"id": doc})
    assert len(versions) > 1 and sum(v["n"] for v in versions) > AGENTS, versions
    assert uuid.UUID(decisions[0])


# -- writers that must never fail for contention --------------------------------


def _counting(store: GraphStore) -> dict[str, int]:
    """Count the units this process runs and how many times their work ran
    (a unit run again after a conflict, a deadlock or a lost lease)."""
    stats = {"units": 0, "runs": 0}
    inner = store.transact

    def transact(project_id: str, work: Any, **kwargs: Any) -> Any:
        stats["units"] += 1

        def counted(tx: Any) -> Any:
            stats["runs"] += 1
            return work(tx)

        return inner(project_id, counted, **kwargs)

    store.transact = transact  # type: ignore[method-assign]
    return stats


def _writer(url: str, project: str, n: int, task: str, start: Any, out: Any) -> None:
    """Events on ``task`` and, every third, a decision citing one: each
    write acknowledged or failed, never retried here (a failure is what
    an agent would see as a 503)."""
    done: dict[str, Any] = {"events": [], "decisions": [], "failed": 0, "kinds": set()}
    try:
        store = open_store(url)
        stats = _counting(store)
        history = ConversationHistory(store, project_id=project, agent_id=f"writer-{n}")
        traces = DecisionTraces(store, project_id=project, agent_id=f"writer-{n}")
        until = _ready(start, out)
        i = 0
        while _going(until, i >= 3):  # on a busy machine, until it has written a few
            i += 1
            try:
                result = history.record_event(task, kind="note", payload=f"w{n} {i}", request_id=f"w{n}-e{i}")
                if result.recorded:
                    done["events"].append((result.event.seq, str(result.event.id)))
                if i % 3 == 0:
                    made = traces.record_decision(
                        task,
                        choice_key=f"w{n}-c{i}",
                        conclusion="yes",
                        rationale="stress",
                        supports=[{"kind": "event", "task_name": task, "seq": 1}],
                        request_id=f"w{n}-d{i}",
                    )
                    if made.recorded:
                        done["decisions"].append(str(made.decision.id))
            except GraphStoreError as exc:
                done["failed"] += 1
                done["kinds"].add(f"{type(exc).__name__}: {str(exc)[:80]}")
        done.update(stats)
        done["lock_waits"] = getattr(store, "lock_waits", 0)
        done["lock_wait_s"] = getattr(store, "lock_wait_s", 0.0)
        store.close()
    except Exception:
        done["crash"] = traceback.format_exc()
    out.put(("writer", n, done))


def run_writers(store: GraphStore, project_id: str, writers: int, one_task: bool, seconds: float) -> dict[str, Any]:
    """``writers`` processes writing for ``seconds`` on a task each, or all
    on one task; then every acknowledged write is looked for. Returns the
    figures: writes, failed, retries (work run again), lock waits, missing
    and duplicated writes, events numbered other than 1..n."""
    history = ConversationHistory(store, project_id=project_id, agent_id="setup")
    traces = DecisionTraces(store, project_id=project_id, agent_id="setup")
    tasks = ["one"] if one_task else [f"task-{n}" for n in range(writers)]
    for task in tasks:
        history.create_task(task, goal="stress")
        history.record_event(task, kind="note", payload="first")
    # each statement the writers send, sent once first: Neo4j plans a new
    # one for a second or more on a busy machine, which is not contention
    for i in range(2):
        history.record_event(tasks[0], kind="note", payload="warm", request_id=f"warm-e{i}")
        traces.record_decision(
            tasks[0],
            choice_key=f"warm-{i}",
            conclusion="yes",
            rationale="warm",
            supports=[{"kind": "event", "task_name": tasks[0], "seq": 1}],
            request_id=f"warm-d{i}",
        )
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start = (ctx.Event(), ctx.Value("d", 0.0))
    procs = [
        ctx.Process(target=_writer, args=(store.url, project_id, n, tasks[n % len(tasks)], start, out))
        for n in range(writers)
    ]
    for p in procs:
        p.start()
    for _ in procs:
        role, _n, r = out.get(timeout=300)
        assert role == "ready", r
    began = time.time()
    start[1].value = began + seconds
    start[0].set()
    results = [out.get(timeout=seconds + GRACE + 300)[2] for _ in procs]
    elapsed = time.time() - began
    for p in procs:
        p.join(timeout=60)
    crashes = [r["crash"] for r in results if "crash" in r]
    assert not crashes, crashes[0]
    events = [e for r in results for e in r["events"]]
    decisions = [d for r in results for d in r["decisions"]]
    found_events = store.read(
        project_id,
        "UNWIND $ids AS id MATCH (e:Event {id: id}) RETURN e.id AS id",
        {"ids": [e[1] for e in events]},
    )
    found_decisions = store.read(
        project_id, "UNWIND $ids AS id MATCH (d:Decision {id: id}) RETURN d.id AS id", {"ids": decisions}
    )
    acked = len(events) + len(decisions)
    found = {r["id"] for r in found_events} | {r["id"] for r in found_decisions}
    misnumbered = 0
    for task in tasks:
        tid = c.task_id(project_id, task)
        seqs = [r["s"] for r in store.read(project_id, "MATCH (e:Event {task_id: $t}) RETURN e.seq AS s", {"t": tid})]
        misnumbered += sorted(seqs) != list(range(1, len(seqs) + 1))
    return {
        "writes": acked,
        "per_s": acked / elapsed,
        "failed": sum(r["failed"] for r in results),
        "kinds": sorted({k for r in results for k in r["kinds"]}),
        "retries": sum(r["runs"] - r["units"] for r in results),
        "units": sum(r["units"] for r in results),
        "lock_waits": sum(r["lock_waits"] for r in results),
        "lock_wait_s": sum(r["lock_wait_s"] for r in results),
        "missing": acked - len(found & ({e[1] for e in events} | set(decisions))),
        "duplicated": (len(events) - len({e[1] for e in events})) + (len(decisions) - len(set(decisions))),
        "twice_found": (len(found_events) - len({r["id"] for r in found_events}))
        + (len(found_decisions) - len({r["id"] for r in found_decisions})),
        "misnumbered_tasks": misnumbered,
    }


WRITERS = 4
WRITE_SECONDS = 4.0


@pytest.mark.parametrize("one_task", [False, True], ids=["own-tasks", "one-task"])
def test_concurrent_writers_never_fail_for_contention(store: GraphStore, project_id: str, one_task: bool) -> None:
    """Writers on a task each, or all on one task: none of their writes
    fails because another writer was at work (on FalkorDB a unit waits for
    the locks of what it reads, not for the whole project's quiet), and
    every acknowledged write is there once."""
    figures = run_writers(store, project_id, WRITERS, one_task, WRITE_SECONDS)
    print(figures)
    assert figures["writes"] >= WRITERS * 3, figures
    assert figures["failed"] == 0, figures
    assert figures["missing"] == figures["duplicated"] == figures["twice_found"] == 0, figures
    assert figures["misnumbered_tasks"] == 0, figures
    if not one_task:
        # writers of other tasks touch nothing a unit read: it waits for
        # the locks it shares with them (the counters'), never runs again
        # because they committed (watching the whole graph, 16 writers ran
        # 1,074 units again for 77 units)
        assert figures["retries"] <= max(2, figures["units"] // 10), figures


def test_the_race_compares_every_root_cause(store: GraphStore, project_id: str) -> None:
    """More root causes in the queue than a page of them: each decision
    flagged when recorded is a cause of its own, and a busy race leaves
    hundreds. The 200 largest kept causes are then fewer than all the
    causes counted (the race once failed so, "84 recording: causes
    missing", with nothing drifted): the race compares each cause's kept
    count instead, and here every one is exact."""
    history = ConversationHistory(store, project_id=project_id, agent_id="setup")
    graph = Graph(store, project_id=project_id, agent_id="setup")
    traces = DecisionTraces(store, project_id=project_id, agent_id="setup")
    history.create_task("shared", goal="causes")
    graph.add("policy", POLICY)
    cite = {"kind": "document", "evidence_id": graph.span_evidence_id("policy", 0, 27)}
    (root,) = traces.load_decisions(
        [{"task_name": "shared", "choice_key": "root", "conclusion": "Postgres", "rationale": "r", "supports": [cite]}]
    )
    assert _counters.top_causes(store, project_id, 10) == []  # nothing in the queue: nothing counted yet
    graph.update("policy", POLICY + "\n\nRevised.")  # flags the root
    built = traces.load_decisions(
        [
            {
                "task_name": "shared",
                "choice_key": f"on-root-{k}",
                "conclusion": "a replica",
                "rationale": "on the root",
                "supports": [{"kind": "decision", "decision_id": str(root.id)}],
            }
            for k in range(230)
        ]
    )
    causes = _direct_causes(store, project_id)
    assert len(causes) == 231 and sum(n for cause, n in causes if cause.startswith("recording:")) == 230
    assert {c for c, _n in causes} == {f"recording:{d.id}" for d in built} | {c for c, _n in causes[:1]}
    assert _counters.top_causes(store, project_id, 200) == causes[:200] != causes  # a page, not all
    checked, wrong = counter_mismatches(store, project_id, ["shared"])
    assert checked > 231 and not wrong, wrong
