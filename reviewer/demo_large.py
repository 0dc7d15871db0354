"""The large demo set: a platform organisation's year of agent work, for
benchmarks and for seeing the dashboard at scale.

One project (``acme-scale`` by default): services under review, each task an
agent's review of one concern of one service (storage, queues, on-call,
retention, …) with a conversation of messages, tool calls, tool results and
notes, steps in every state, and decisions that cite the organisation's
policies and runbooks, the conversation, and the service's earlier decisions.
Then policies are revised (flagging the decisions citing them), one runbook
is retired, and a review sweep runs part of the way, so the queue holds
decisions needing review, decisions reading unknown, and dependency chains.

Everything goes through the core API in batches (``load_events``, a task's
conversation per unit; ``load_decisions``, sixteen tasks' decisions per
unit), deterministic for a given seed, streamed so the seeding process stays
small: at most one task's events and one batch of decisions are in memory at
a time. ``progress(stage, 0, total)`` marks the start of each stage.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.stores import GraphStore
from reviewer.demo import Counts

PROJECT = "acme-scale"
SERVICES = (
    "orders",
    "payments",
    "ledger",
    "search",
    "checkout",
    "catalog",
    "identity",
    "notifications",
    "shipping",
    "pricing",
    "inventory",
    "reporting",
    "billing",
    "fraud",
    "support",
    "analytics",
)
CONCERNS = {
    "storage": ("Postgres", "FalkorDB", "DynamoDB", "keep the current store"),
    "queue": ("Kafka", "RabbitMQ", "SQS", "no queue"),
    "on-call": ("team rota", "follow-the-sun", "platform on-call", "business hours only"),
    "retention": ("30 days", "90 days", "one year", "delete on request only"),
    "caching": ("Redis", "in-process cache", "CDN", "no cache"),
    "deploys": ("blue-green", "canary", "rolling", "weekly train"),
    "backups": ("hourly snapshots", "continuous WAL archiving", "daily dumps", "provider backups"),
    "alerts": ("SLO burn rate", "static thresholds", "anomaly detection", "page on errors only"),
    "secrets": ("Vault", "cloud KMS", "sealed secrets", "environment variables"),
    "capacity": ("autoscale on CPU", "autoscale on queue depth", "fixed fleet", "serverless"),
}
POLICIES = {
    "storage": "Services keep their data in Postgres unless a design review approves another store.",
    "queue": "Kafka is the supported event log; RabbitMQ remains for legacy task queues only.",
    "on-call": "The primary on-call engineer acknowledges a page within 15 minutes.",
    "retention": "Customer support transcripts are kept for 90 days, then deleted.",
    "caching": "Caches hold no personal data and expire entries within one hour.",
    "deploys": "Production deploys are canaried on five percent of traffic for thirty minutes.",
    "backups": "Databases are restorable to any point in the last seven days.",
    "alerts": "Pages fire on SLO burn rate; dashboards carry everything else.",
    "secrets": "Secrets live in Vault and are rotated every ninety days.",
    "capacity": "Every service survives the loss of one availability zone at peak load.",
}
TOOLS = ("search_docs", "read_runbook", "query_metrics", "list_incidents", "read_adr", "run_query")
DECISIONS_PER_TASK = 100
#: decisions in one ``load_decisions`` unit while seeding
BATCH_DECISIONS = 1_600
STATES = ("completed", "in_progress", "not_started", "failed", "unknown")


@dataclass
class LargeCounts(Counts):
    flagged: int = 0  # by the document changes
    queued: int = 0  # left for the review sweep


def seed_large(
    store: GraphStore,
    *,
    project: str = PROJECT,
    decisions: int = 100_000,
    events: int = 1_000_000,
    seed: int = 7,
    decisions_per_task: int = DECISIONS_PER_TASK,
    progress: Callable[[str, int, int], None] | None = None,
) -> LargeCounts:
    """Write the large set; ``progress(stage, done, total)`` is called as it goes.

    ``decisions_per_task`` (100 by default) sets how many tasks the set has
    (``decisions / decisions_per_task``, each with its share of the events);
    the ten-million-event set uses 1,000, a tenth of the tasks and so a tenth
    of the write units (see docs/stores.md on what each unit costs FalkorDB
    in a graph of millions of nodes)."""
    with store.unhurried():  # bulk loads of thousands of rows: long on purpose
        return _seed_large(
            store,
            project=project,
            decisions=decisions,
            events=events,
            seed=seed,
            decisions_per_task=decisions_per_task,
            progress=progress,
        )


def _seed_large(
    store: GraphStore,
    *,
    project: str,
    decisions: int,
    events: int,
    seed: int,
    decisions_per_task: int,
    progress: Callable[[str, int, int], None] | None,
) -> LargeCounts:
    # One function on purpose: the stages run in order, each feeding the
    # next (documents, tasks and events, decisions, then revisions and the
    # sweep), and its batching is easiest to check read top to bottom.
    if decisions_per_task < 1:
        raise ValueError("decisions_per_task must be at least 1")
    rng = random.Random(seed)
    counts = LargeCounts()
    say = progress or (lambda stage, done, total: None)
    history = ConversationHistory(store, project_id=project, agent_id="review-agent")
    graph = Graph(store, project_id=project, agent_id="ingest")
    traces = DecisionTraces(store, project_id=project, agent_id="review-agent")

    # the organisation's documents: one policy per concern, one runbook per service
    for concern, text in POLICIES.items():
        graph.add(f"policy/{concern}", f"{concern.title()} policy\n\n{text}", request_id=f"demo-large:policy:{concern}")
        counts.documents += 1
    for service in SERVICES:
        graph.add(
            f"runbook/{service}",
            f"{service.title()} runbook\n\nThe {service} team owns this service. "
            f"Escalate to the {service} lead after 30 minutes.",
            request_id=f"demo-large:runbook:{service}",
        )
        counts.documents += 1
    policy_cite = {}
    for concern, text in POLICIES.items():
        current = graph.current_text(f"policy/{concern}")
        start = current.index(text)
        policy_cite[concern] = {
            "kind": "document",
            "evidence_id": graph.span_evidence_id(f"policy/{concern}", start, start + len(text)),
        }

    runbook_cite = {
        service: {"kind": "document", "evidence_id": graph.span_evidence_id(f"runbook/{service}", 0, len(service) + 8)}
        for service in SERVICES
    }

    tasks = max(1, decisions // decisions_per_task)
    per_task_events = max(4, events // tasks)
    names = []
    for t in range(tasks):
        service = SERVICES[t % len(SERVICES)]
        concern = list(CONCERNS)[(t // len(SERVICES)) % len(CONCERNS)]
        name = f"{service}-{concern}-review-{t // (len(SERVICES) * len(CONCERNS)) + 1:03d}"
        names.append((name, service, concern))

    # tasks with their conversations, a task at a time
    say("tasks and events", 0, tasks)
    for n, (name, service, concern) in enumerate(names):
        history.create_task(
            name, goal=f"Review the {concern} of the {service} service", request_id=f"demo-large:task:{name}"
        )
        counts.tasks += 1
        batch = list(_conversation(rng, service, concern, per_task_events))
        for i in range(0, len(batch), 2000):
            history.load_events(name, batch[i : i + 2000])
        counts.events += len(batch)
        for s, state in enumerate(STATES):
            supported = state == "completed"
            history.set_step(
                name,
                name=f"step-{s + 1}-{state.replace('_', '-')}",
                state=state,
                kind="read" if supported else "analysis",
                result_basis="supported" if supported else "unknown",
                result_supports=[{"kind": "event", "task_name": name, "seq": 1}] if supported else None,
                request_id=f"demo-large:step:{name}:{s}",
            )
            counts.steps += 1
        say("tasks and events", n + 1, tasks)

    # decisions, the tasks of one round of the services per batch (16 tasks,
    # 1,600 decisions; fewer tasks when they hold more: a batch never holds
    # a decision and the one it depends on); every tenth cites its concern's
    # policy, every tenth its service's runbook, and two in five depend on
    # the service's first decision in its previous task (chains across tasks)
    say("decisions", 0, tasks)
    previous: dict[str, str] = {}
    per_batch = max(1, min(len(SERVICES), BATCH_DECISIONS // decisions_per_task))
    for first in range(0, len(names), per_batch):
        group = names[first : first + per_batch]
        items = []
        for name, service, concern in group:
            items += _decision_items(
                rng, name, service, concern, per_task_events, decisions_per_task, policy_cite, runbook_cite, previous
            )
        made = traces.load_decisions(items)
        for n, (_name, service, _concern) in enumerate(group):
            previous[service] = str(made[n * decisions_per_task].id)
        counts.decisions += len(made)
        say("decisions", first + len(group), tasks)

    say("revisions and sweep", 0, 1)
    # what changed since: two policies revised (one only moved its text, one
    # changed it), the orders runbook retired (merged into payments), then
    # part of a review sweep
    for concern in ("storage", "on-call"):
        text = graph.current_text(f"policy/{concern}")
        revised = (
            "Reviewed by the architecture group this year.\n\n" + text
            if concern == "storage"
            else text.replace("15 minutes", "5 minutes")
        )
        counts.flagged += len(
            graph.update(f"policy/{concern}", revised, request_id=f"demo-large:revise:{concern}").flagged_decision_ids
        )
    counts.flagged += len(graph.delete("runbook/orders", request_id="demo-large:retire").flagged_decision_ids)
    for _ in range(3):
        step = traces.continue_decision_review()
        if not step.more:
            break
    counts.queued = traces.review_counts()["queued"]
    say("revisions and sweep", 1, 1)
    return counts


def _decision_items(
    rng: random.Random,
    name: str,
    service: str,
    concern: str,
    per_task_events: int,
    decisions_per_task: int,
    policy_cite: dict[str, dict[str, str]],
    runbook_cite: dict[str, dict[str, str]],
    previous: dict[str, str],
) -> list[dict[str, object]]:
    """One task's decisions, as ``load_decisions`` items."""
    options = CONCERNS[concern]
    items: list[dict[str, object]] = []
    for k in range(decisions_per_task):
        choice = f"{service}-{concern}-{k:03d}"
        supports = [{"kind": "event", "task_name": name, "seq": 1 + (k * 7) % per_task_events}]
        if k % 10 == 0:
            supports.append(policy_cite[concern])
        if k % 10 == 5:
            supports.append(runbook_cite[service])
        if k % 5 in (0, 1) and service in previous:
            supports.append({"kind": "decision", "decision_id": previous[service]})
        option = options[rng.randrange(len(options))] if k % 3 else options[0]
        items.append(
            {
                "task_name": name,
                "choice_key": choice,
                "conclusion": f"{service}: {option}",
                "rationale": f"For {concern} item {k} the {service} team weighed {', '.join(options[:3])}; "
                f"{option} fits the load and the {concern} policy.",
                "assumptions": [f"{service} traffic grows under 30% a year"] if k % 4 == 0 else [],
                "open_questions": [f"Who owns {concern} for {service} after the reorg?"] if k % 9 == 0 else [],
                "supports": supports,
            }
        )
    return items


def _conversation(rng: random.Random, service: str, concern: str, n: int) -> list[dict[str, object]]:
    """An agent's review conversation of ``n`` events."""
    out: list[dict[str, object]] = [
        {
            "kind": "message",
            "role": "user",
            "payload": f"Please review the {concern} of {service} against our policies and propose decisions.",
        }
    ]
    while len(out) < n:
        tool = TOOLS[rng.randrange(len(TOOLS))]
        step = len(out)
        out.append(
            {
                "kind": "tool_call",
                "name": tool,
                "payload": f'{{"service": "{service}", "topic": "{concern}", "page": {step}}}',
            }
        )
        out.append(
            {
                "kind": "tool_result",
                "name": tool,
                "payload": f"{tool} for {service}/{concern}: {rng.randrange(3, 40)} matching entries; "
                f"p99 latency {rng.randrange(20, 900)} ms, error rate {rng.random():.3f}%.",
            }
        )
        if step % 10 == 1:
            out.append(
                {
                    "kind": "note",
                    "payload": f"The {concern} setup of {service} matches the policy "
                    f"except for item {rng.randrange(1, 20)}.",
                }
            )
        if step % 25 == 1:
            out.append(
                {
                    "kind": "message",
                    "role": "assistant",
                    "payload": f"Interim finding for {service}: {concern} needs "
                    f"{rng.choice(('no change', 'a small change', 'a design review'))}.",
                }
            )
    return out[:n]
