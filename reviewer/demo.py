"""Demo data told as real engineering work, written through the core API only.

Two projects: ``acme-payments`` (choosing the orders database, owning the
payments service, an incident follow-up, a queue choice that two teams made
differently) and ``globex-platform`` (a smaller platform team). After the
story is recorded, documents change and one is deleted, an event with personal
data is redacted, and one review sweep step runs, so the queue holds decisions
that need review, decisions that read unknown, and dependency chains.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.retention import HistoryRetention
from core.stores import GraphStore

PROJECTS = ("acme-payments", "globex-platform")


@dataclass
class Counts:
    tasks: int = 0
    events: int = 0
    steps: int = 0
    documents: int = 0
    decisions: int = 0


class _Project:
    def __init__(self, store: GraphStore, project: str, counts: Counts) -> None:
        self.counts = counts
        self.history = ConversationHistory(store, project_id=project, agent_id="planner-agent")
        self.graph = Graph(store, project_id=project, agent_id="ingest")
        self.traces = DecisionTraces(store, project_id=project, agent_id="planner-agent")
        self.retention = HistoryRetention(store, project_id=project, agent_id="dana.steward")
        self.store = store
        self.project = project

    def task(self, name: str, goal: str, events: list[tuple[str, str, str | None]]) -> None:
        self.history.create_task(name, goal=goal, request_id=f"demo:{name}")
        self.counts.tasks += 1
        for n, (kind, text, who) in enumerate(events, start=1):
            extra = {"role": who} if kind == "message" else {"name": who} if who else {}
            self.history.record_event(name, kind=kind, payload=text, request_id=f"demo:{name}:{n}", **extra)
            self.counts.events += 1

    def steps(self, task: str, steps: list[tuple[str, str, str]]) -> None:
        for name, state, kind in steps:
            supported = state == "completed" and kind == "read"
            self.history.set_step(
                task,
                name=name,
                state=state,
                kind=kind,
                result_basis="supported" if supported else "independent" if state == "completed" else "unknown",
                result_supports=[{"kind": "event", "task_name": task, "seq": 1}] if supported else None,
            )
            self.counts.steps += 1

    def doc(self, key: str, text: str) -> None:
        self.graph.add(key, text)
        self.counts.documents += 1

    def cite(self, key: str, passage: str) -> tuple[dict[str, Any], Any]:
        text = self.graph.current_text(key) or ""
        start = text.index(passage)
        evidence = self.graph.span_evidence_id(key, start, start + len(passage))
        return {"kind": "document", "evidence_id": evidence}, self.graph.fetch(evidence)

    def decide(
        self,
        task: str,
        key: str,
        conclusion: str,
        rationale: str,
        *,
        docs: list[tuple[str, str]] = (),
        events: list[tuple[str, int]] = (),
        deps: list[Any] = (),
        assumptions: list[str] | None = None,
        questions: list[str] | None = None,
    ) -> Any:
        supports: list[dict[str, Any]] = []
        fetched = []
        for doc_key, passage in docs:
            s, f = self.cite(doc_key, passage)
            supports.append(s)
            fetched.append(f)
        supports += [{"kind": "event", "task_name": t, "seq": s} for t, s in events]
        supports += [{"kind": "decision", "decision_id": str(d.id)} for d in deps]
        result = self.traces.record_decision(
            task,
            choice_key=key,
            conclusion=conclusion,
            rationale=rationale,
            supports=supports,
            fetched=fetched,
            assumptions=assumptions or [],
            open_questions=questions or [],
            request_id=f"demo:{task}:{key}",
        )
        assert result.recorded, (task, key, result.error)
        self.counts.decisions += 1
        return result.decision


ADR_ORDERS = (
    "ADR 3: the orders database\n\n"
    "Orders stay on PostgreSQL 16 with logical replication to the analytics cluster.\n\n"
    "We revisit this choice when write volume passes 5,000 orders per second."
)
RUNBOOK = (
    "Payments on-call runbook\n\n"
    "The primary on-call engineer acknowledges a page within 15 minutes.\n\n"
    "Card-network incidents are escalated to the payments lead after 30 minutes."
)
RETENTION = "Data retention policy\n\nCustomer support transcripts are kept for 90 days, then deleted."
QUEUE_NOTES = (
    "Messaging platform notes\n\n"
    "Kafka is the supported event log; RabbitMQ remains for legacy task queues only.\n\n"
    "New services publish domain events to Kafka."
)


def seed(store: GraphStore, *, projects: tuple[str, str] = PROJECTS) -> Counts:
    """Write the small demo set into the two ``projects``; returns what it
    wrote. The story is fixed, so every run writes the same data."""
    counts = Counts()
    with store.unhurried():  # many writes, some of them bulk loads: long on purpose
        _acme(_Project(store, projects[0], counts))
        _globex(_Project(store, projects[1], counts))
    return counts


def _acme(p: _Project) -> None:
    # One function on purpose: the demo is a story told in the order it
    # happened (documents, conversations, decisions, then the changes that
    # flag them), and reads best top to bottom.
    p.doc("adr/0003-orders-database", ADR_ORDERS)
    p.doc("runbook/payments-oncall", RUNBOOK)
    p.doc("policy/data-retention", RETENTION)
    p.doc("notes/messaging-platform", QUEUE_NOTES)

    p.task(
        "choose-orders-db",
        "Choose the database for the orders service",
        [
            ("message", "Which database should the new orders service use? We expect 800 orders/s at peak.", "user"),
            ("tool_call", "search_documents('orders database decision')", "search"),
            ("tool_result", "Found ADR 3: orders stay on PostgreSQL 16 with logical replication.", "search"),
            ("tool_call", "query_metrics('orders.write_rate', '90d')", "metrics"),
            ("tool_result", "p99 write rate over 90 days: 1,140 orders/s; growth 4% per month.", "metrics"),
            ("note", "Well under the 5,000/s revisit threshold in ADR 3; no case for a new store.", None),
        ],
    )
    p.steps(
        "choose-orders-db",
        [
            ("gather-adrs", "completed", "read"),
            ("load-profile", "completed", "read"),
            ("compare-options", "completed", "analysis"),
            ("write-summary", "in_progress", "other"),
        ],
    )
    orders_db = p.decide(
        "choose-orders-db",
        "orders-database",
        "Keep orders on PostgreSQL 16",
        "ADR 3 keeps orders on PostgreSQL and the measured write rate (1,140/s) is far below its revisit threshold.",
        docs=[
            (
                "adr/0003-orders-database",
                "Orders stay on PostgreSQL 16 with logical replication to the analytics cluster.",
            )
        ],
        events=[("choose-orders-db", 5)],
        assumptions=["Write growth stays near 4% per month"],
        questions=["Does analytics still need logical replication after the warehouse move?"],
    )
    replication = p.decide(
        "choose-orders-db",
        "orders-replication",
        "Use logical replication for analytics",
        "Follows from keeping PostgreSQL; ADR 3 names logical replication.",
        deps=[orders_db],
        docs=[("adr/0003-orders-database", "logical replication to the analytics cluster")],
    )

    p.task(
        "own-payments-service",
        "Decide who owns the payments service and its paging policy",
        [
            ("message", "Team Ledger is taking over payments from Platform. What does on-call look like?", "user"),
            ("tool_call", "fetch('runbook/payments-oncall')", "docs"),
            (
                "tool_result",
                "Primary acknowledges within 15 minutes; escalate card-network incidents after 30.",
                "docs",
            ),
            ("message", "Ledger has five engineers in two time zones.", "user"),
        ],
    )
    p.steps(
        "own-payments-service",
        [
            ("read-runbook", "completed", "read"),
            ("check-rota", "failed", "read"),
            ("draft-rota", "not_started", "other"),
            ("confirm-owner", "unknown", "other"),
        ],
    )
    owner = p.decide(
        "own-payments-service",
        "payments-owner",
        "Team Ledger owns the payments service",
        "The handover was agreed; Ledger covers two time zones.",
        events=[("own-payments-service", 1), ("own-payments-service", 4)],
    )
    sla = p.decide(
        "own-payments-service",
        "pager-ack-sla",
        "Acknowledge payments pages within 15 minutes",
        "The runbook sets 15 minutes for the primary on-call engineer.",
        docs=[("runbook/payments-oncall", "acknowledges a page within 15 minutes")],
        deps=[owner],
    )
    rota = p.decide(
        "own-payments-service",
        "rota-shape",
        "Follow-the-sun rota across both Ledger offices",
        "A 15-minute acknowledgement needs someone awake in each office's day.",
        deps=[sla, owner],
    )

    p.task(
        "incident-2026-11-12-followup",
        "Follow up the 12 November card authorisation outage",
        [
            (
                "message",
                "Customer jane.doe@example.com reported double charges, card ending 4242, phone +1 555 0100.",
                "user",
            ),
            ("tool_call", "search_logs('auth timeout', '2026-11-12')", "logs"),
            ("tool_result", "Authorisation calls to the card network timed out for 41 minutes from 14:02 UTC.", "logs"),
            ("note", "The page was acknowledged after 22 minutes: outside the runbook's 15.", None),
            ("message", "Can we make retries idempotent before the next peak?", "user"),
        ],
    )
    p.steps(
        "incident-2026-11-12-followup",
        [
            ("collect-timeline", "completed", "read"),
            ("root-cause", "completed", "analysis"),
            ("action-items", "in_progress", "other"),
        ],
    )
    cause = p.decide(
        "incident-2026-11-12-followup",
        "root-cause",
        "Network timeouts without idempotent retries",
        "Logs show 41 minutes of timeouts; retries created double charges.",
        events=[("incident-2026-11-12-followup", 1), ("incident-2026-11-12-followup", 3)],
    )
    p.decide(
        "incident-2026-11-12-followup",
        "retry-policy",
        "Add idempotency keys to every authorisation retry",
        "Removes the double charges behind the outage.",
        deps=[cause, rota],
        questions=["Does the card network honour keys across regions?"],
    )
    p.decide(
        "incident-2026-11-12-followup",
        "escalation",
        "Escalate to the payments lead after 30 minutes",
        "The runbook's escalation rule applied and worked.",
        docs=[("runbook/payments-oncall", "escalated to the payments lead after 30 minutes")],
        deps=[sla],
    )

    p.task(
        "pick-queue-ledger",
        "Pick the queue for ledger reconciliation jobs",
        [
            ("message", "Reconciliation jobs need retries and a dead-letter queue.", "user"),
            ("tool_call", "fetch('notes/messaging-platform')", "docs"),
            ("tool_result", "Kafka is the supported event log; RabbitMQ remains for legacy task queues.", "docs"),
        ],
    )
    p.task(
        "pick-queue-checkout",
        "Pick the queue for checkout notifications",
        [
            ("message", "Checkout emails must go out even when the mailer is slow.", "user"),
            ("tool_call", "fetch('notes/messaging-platform')", "docs"),
            ("tool_result", "New services publish domain events to Kafka.", "docs"),
        ],
    )
    p.decide(
        "pick-queue-ledger",
        "job-queue",
        "RabbitMQ for reconciliation jobs",
        "Per-message retries and dead-lettering are built in; these are task-queue jobs.",
        docs=[("notes/messaging-platform", "RabbitMQ remains for legacy task queues only.")],
    )
    first = p.decide(
        "pick-queue-checkout",
        "job-queue",
        "RabbitMQ for checkout notifications",
        "The team knows RabbitMQ.",
        events=[("pick-queue-checkout", 1)],
    )
    superseded = p.traces.supersede_decision(
        str(first.id),
        conclusion="Kafka for checkout notifications",
        rationale="Notifications are domain events; the platform notes make Kafka the supported log.",
        explanation="The platform notes say new services publish domain events to Kafka.",
        supports=[p.cite("notes/messaging-platform", "New services publish domain events to Kafka.")[0]],
        fetched=[p.cite("notes/messaging-platform", "New services publish domain events to Kafka.")[1]],
        request_id="demo:supersede:checkout-queue",
    )
    assert superseded.recorded, superseded.error
    p.counts.decisions += 1

    p.task(
        "retention-review",
        "Check support transcripts against the retention policy",
        [
            ("tool_call", "fetch('policy/data-retention')", "docs"),
            ("tool_result", "Support transcripts are kept for 90 days, then deleted.", "docs"),
        ],
    )
    keep = p.decide(
        "retention-review",
        "transcript-retention",
        "Delete support transcripts after 90 days",
        "The retention policy says 90 days.",
        docs=[("policy/data-retention", "Customer support transcripts are kept for 90 days, then deleted.")],
    )
    rejected = p.decide(
        "retention-review",
        "transcript-export",
        "Export transcripts to the data lake nightly",
        "Analytics asked for them.",
        events=[("retention-review", 1)],
    )
    p.traces.reject_decision(
        str(rejected.id),
        reason="Conflicts with the 90-day retention policy; analytics gets aggregates instead.",
        request_id="demo:reject:export",
    )
    del keep, replication

    # what changed afterwards: the review work
    p.graph.update("adr/0003-orders-database", "Status: accepted, reviewed 2026-11.\n\n" + ADR_ORDERS)
    p.graph.update("runbook/payments-oncall", RUNBOOK.replace("within 15 minutes", "within 5 minutes"))
    p.traces.continue_decision_review(limit=2)  # a sweep ran between the changes...
    p.graph.delete("policy/data-retention")
    incident = p.history.fetch_event("incident-2026-11-12-followup", 1).event
    p.retention.redact_event(
        str(incident.id), reason="Customer personal data in a chat message", request_id="demo:redact:incident-1"
    )
    # ...and none since the redaction: what depends on the incident's root cause still reads unknown


def _globex(p: _Project) -> None:
    p.doc("standards/service-slo", "Service standards\n\nTier-1 services target 99.95% monthly availability.")
    p.task(
        "set-api-slo",
        "Set the public API's availability target",
        [
            ("message", "What SLO should the public API commit to?", "user"),
            ("tool_result", "Tier-1 services target 99.95% monthly availability.", "docs"),
        ],
    )
    p.task(
        "set-billing-slo",
        "Set the billing API's availability target",
        [
            ("message", "Billing wants a looser SLO during the migration.", "user"),
        ],
    )
    p.steps("set-api-slo", [("read-standards", "completed", "read"), ("agree-with-product", "not_started", "other")])
    p.decide(
        "set-api-slo",
        "api-slo",
        "99.95% monthly availability",
        "Tier-1 standard.",
        docs=[("standards/service-slo", "Tier-1 services target 99.95% monthly availability.")],
    )
    p.decide(
        "set-billing-slo",
        "api-slo",
        "99.9% monthly availability during the migration",
        "Billing accepts a looser target for one quarter.",
        events=[("set-billing-slo", 1)],
    )
