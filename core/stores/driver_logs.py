"""The Neo4j driver's logs, without what our statements carry.

At DEBUG the driver's ``neo4j.io`` logger writes every Bolt message it sends,
a statement's parameters included (``C: RUN 'query' {parameters} {extra}``),
and over its HTTP transport each request's JSON body and each answer's body.
Our parameters hold event ciphertext (with its key, the text), and the
answers hold what was read. ``install`` puts a filter on each of the
driver's loggers that rewrites those records before any handler sees them,
whatever the level and the handlers a deployment configures (a logger's own
filters run before its records reach any handler, its own or an
ancestor's): the message keeps its kind and connection number, and says that
the rest is not logged. Every other driver record (connections, pools,
HELLO with the driver's own credential masking, SUCCESS and FAILURE
metadata, record counts, notifications that quote the query text, which
holds no values) is left as the driver wrote it.
"""

from __future__ import annotations

import logging

__all__ = ["NOT_LOGGED", "DriverParameterFilter", "install"]

#: What a rewritten record says in place of the query, parameters or body.
NOT_LOGGED = "(query, parameters and bodies not logged)"

#: The driver's loggers (``neo4j`` 5 and 6); ``install`` adds any other
#: ``neo4j.*`` logger that exists when it runs.
LOGGERS = (
    "neo4j",
    "neo4j.io",
    "neo4j.pool",
    "neo4j.session",
    "neo4j.auth_management",
    "neo4j.notifications",
)

# the message templates (``record.msg``) that carry a statement or a body:
# Bolt's RUN, and the HTTP transport's request and answer lines
_CARRIERS = ("C: RUN", "C: %s %s %s", "S: %3d %r")


class DriverParameterFilter(logging.Filter):
    """Rewrites a driver record that carries a statement or a body; lets
    every record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        template = record.msg if isinstance(record.msg, str) else ""
        if any(carrier in template for carrier in _CARRIERS):
            kind = "C: RUN" if "C: RUN" in template else ("C:" if " C: " in template else "S:")
            first = record.args[0] if isinstance(record.args, tuple) and record.args else 0
            record.msg = f"[#%04X]  {kind} {NOT_LOGGED}"
            record.args = (first if isinstance(first, int) else 0,)
        return True


_FILTER = DriverParameterFilter()


def install() -> None:
    """Put the filter on every driver logger (once each; safe to call again)."""
    names = set(LOGGERS) | {
        name for name in logging.root.manager.loggerDict if name == "neo4j" or name.startswith("neo4j.")
    }
    for name in sorted(names):
        logger = logging.getLogger(name)
        if not any(isinstance(f, DriverParameterFilter) for f in logger.filters):
            logger.addFilter(_FILTER)
