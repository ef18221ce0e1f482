"""Which dkpro-cassis the fast paths of :mod:`casflow.cas` were written against.

:mod:`casflow.cas.xmi` reproduces the bytes of cassis's XMI serializer and
:mod:`casflow.cas.sofa` replaces cassis's offset tables; both read cassis
internals. They are used only with a cassis release whose output they were
checked against (tests/test_xmi_writer.py, dkpro-cassis's own test files among
them); with any other release casflow uses cassis's public API, which is slower
but always right. ``CASFLOW_CASSIS_FAST_PATHS=0`` turns them off whatever the
version (to compare, or to work around a problem).
"""

from __future__ import annotations

import logging
import os
from importlib import metadata

logger = logging.getLogger(__name__)

#: cassis releases (major, minor) whose internals and XMI bytes the fast paths match.
TESTED_RELEASES: frozenset[tuple[int, int]] = frozenset({(0, 12)})

_ENV = "CASFLOW_CASSIS_FAST_PATHS"


def cassis_release(version: str | None = None) -> tuple[int, int] | None:
    """(major, minor) of the installed dkpro-cassis (or of ``version``); None if unknown."""
    if version is None:
        try:
            version = metadata.version("dkpro-cassis")
        except metadata.PackageNotFoundError:
            return None
    parts = version.split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def fast_paths_allowed(version: str | None = None) -> bool:
    """Whether the installed cassis (or ``version``) is one the fast paths were checked against."""
    if os.environ.get(_ENV, "").strip().lower() in ("0", "false", "no", "off"):
        return False
    return cassis_release(version) in TESTED_RELEASES


def fallback_reason(version: str | None = None) -> str:
    release = cassis_release(version)
    shown = "unknown" if release is None else f"{release[0]}.{release[1]}"
    if os.environ.get(_ENV, "").strip().lower() in ("0", "false", "no", "off"):
        return f"{_ENV} turns them off"
    tested = ", ".join(f"{a}.{b}" for a, b in sorted(TESTED_RELEASES))
    return f"dkpro-cassis {shown} is not a release they were checked against ({tested})"


FAST_PATHS = fast_paths_allowed()
if not FAST_PATHS:
    logger.info("casflow writes XMI and sets texts with cassis's own code: %s", fallback_reason())
