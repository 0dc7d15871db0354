"""Every schema declaration of the core in one place: the indexes and
constraints each store ensures (once per store and project) before a service
reads or writes. Services ensure :data:`CORE_SCHEMA`, so any of them can open
a project first.
"""

from __future__ import annotations

from .stores.base import FullTextIndex, NodeIndex, RelationshipIndex, Schema

#: Request records (seed 000, "Request ids"): one per request id and project.
REQUEST_SCHEMA = Schema((NodeIndex("Request", ("id",), unique=True),))

HISTORY_SCHEMA = (
    Schema(
        (
            NodeIndex("Task", ("id",), unique=True),
            NodeIndex("Task", ("project_id",)),
            NodeIndex("Event", ("id",), unique=True),
            NodeIndex("Event", ("task_id",)),
            NodeIndex("Step", ("id",), unique=True),
            NodeIndex("Step", ("task_id",)),
        )
    )
    + REQUEST_SCHEMA
)

KNOWLEDGE_SCHEMA = Schema(
    (
        NodeIndex("Document", ("id",), unique=True),
        NodeIndex("Document", ("project_id",)),
        NodeIndex("DocVersion", ("id",), unique=True),
        NodeIndex("DocVersion", ("document_id",)),
        # a document write's open flag job, and the ids its units kept for a request (``_flag_jobs``)
        NodeIndex("FlagJob", ("id",), unique=True),
        NodeIndex("FlagJob", ("project_id",)),
        NodeIndex("FlagBatch", ("id",), unique=True),
        NodeIndex("FlagBatch", ("request",)),
    )
)

DECISION_SCHEMA = Schema(
    (
        NodeIndex("Decision", ("id",), unique=True),
        NodeIndex("Decision", ("active_key",), unique=True),
        NodeIndex("Decision", ("project_id",)),
        NodeIndex("Decision", ("task_id",)),
        NodeIndex("Decision", ("choice_key",)),
        NodeIndex("Decision", ("review_open",)),
        NodeIndex("Decision", ("queue_pos",)),
        NodeIndex("Decision", ("queued",)),
        NodeIndex("Decision", ("root_cause",)),  # a root-cause group of the queue (review_views)
        NodeIndex("Choice", ("id",), unique=True),
        NodeIndex("Choice", ("conflict",)),
        NodeIndex("Choice", ("project_id", "conflict")),  # a project's conflicts, on Neo4j
        NodeIndex("Choice", ("project_id", "conflict", "key"), ordered=True),  # ... in key order
        # the conflicts in key order where no index reads them so (``_conflict_keys``)
        NodeIndex("Choice", ("keys_moved",)),
        NodeIndex("ConflictKeys", ("id",), unique=True),
        NodeIndex("ConflictBucket", ("id",), unique=True),
        NodeIndex("SupportRecord", ("id",), unique=True),
        NodeIndex("SupportRecord", ("decision_id",)),
        # index-backed orderings: the queue of a project (Neo4j keeps every
        # project in one graph) and of a task, a task's newest decisions
        NodeIndex("Decision", ("project_id", "queue_pos")),
        NodeIndex("Decision", ("task_id", "active_seq")),
        NodeIndex("Decision", ("task_id", "queue_pos")),
        NodeIndex("Decision", ("root_cause", "queue_pos")),  # a root-cause group in queue order
        NodeIndex("ReviewQueue", ("id",), unique=True),
        NodeIndex("QueueCause", ("id",), unique=True),  # the kept size of a root cause's group
        NodeIndex("QueueCause", ("project_id",)),
        NodeIndex("TaskDecisions", ("id",), unique=True),
        NodeIndex("Activity", ("id",), unique=True),
        NodeIndex("Activity", ("project_id",)),
        # what changed since a person last looked (``core.notices``): entries and flags after a
        # time. Ranges over a time are read in order on Neo4j only (``ordered``): FalkorDB's
        # range index answers ``x < $t`` on a string with every node (FalkorDB 4.x, seen here),
        # so there these read through the project's index and filter.
        NodeIndex("Activity", ("project_id", "at"), ordered=True),
        NodeIndex("Decision", ("project_id", "flagged_at"), ordered=True),
        NodeIndex("Choice", ("project_id", "updated_at"), ordered=True),
        # a person's notices, newest first (``core.notices``): the entries naming them
        NodeIndex("Notice", ("project_id", "person")),
        NodeIndex("Notice", ("project_id", "person", "at"), ordered=True),
    ),
    (FullTextIndex("Decision", ("conclusion", "rationale")),),
    # a version's citations by their place among its citations (``_citations``)
    (RelationshipIndex("CITES_DOC", ("version_id", "pos")),),
)

#: Activity entries whose disk purge is pending (``core._purge``).
PURGE_SCHEMA = Schema((NodeIndex("Activity", ("purge",)),))

#: The activity log read by filter (``core._activity``): a project's entries
#: in time order (Neo4j reads the composite in its order), and one index per
#: filter that narrows. No index on ``at`` alone: FalkorDB's range index
#: answers a string range (``a.at < $at``) with every entry (FalkorDB 4.x,
#: found here); ``at_us``, the same time as a number, is what a long read
#: ranges over a window at a time (``ActivityLog.every``).
ACTIVITY_SCHEMA = Schema(
    (
        NodeIndex("Activity", ("project_id", "at"), ordered=True),
        NodeIndex("Activity", ("at_us",)),
        NodeIndex("Activity", ("actor",)),
        NodeIndex("Activity", ("action",)),
        NodeIndex("Activity", ("task_id",)),
        NodeIndex("Activity", ("target_id",)),
        NodeIndex("ActivityTasks", ("id",), unique=True),  # older entries were given their task
    )
)

#: Claims and assignments of decisions and root-cause groups (``core.claims``).
CLAIM_SCHEMA = Schema(
    (
        NodeIndex("Claim", ("id",), unique=True),
        NodeIndex("Claim", ("holder",)),
        NodeIndex("Claim", ("project_id",)),
        NodeIndex("Assignment", ("id",), unique=True),
        NodeIndex("Assignment", ("assignee",)),
        NodeIndex("Assignment", ("project_id",)),
        NodeIndex("TeamSettings", ("id",), unique=True),
    )
)

#: Discussion (``core.comments``): threads and comments of a decision, and
#: the kept count and latest comment per decision the queue cards read.
COMMENT_SCHEMA = Schema(
    (
        NodeIndex("Thread", ("id",), unique=True),
        NodeIndex("Thread", ("decision_id",)),
        NodeIndex("Comment", ("id",), unique=True),
        NodeIndex("Comment", ("thread_id",)),
        NodeIndex("Comment", ("decision_id",)),
        NodeIndex("DecisionComments", ("id",), unique=True),
    )
)

#: What every service of the core needs.
CORE_SCHEMA = (
    HISTORY_SCHEMA + KNOWLEDGE_SCHEMA + DECISION_SCHEMA + PURGE_SCHEMA + ACTIVITY_SCHEMA + CLAIM_SCHEMA + COMMENT_SCHEMA
)
