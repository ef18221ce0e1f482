"""cassis's ``select`` of a type with subtypes, in the same order in every run.

In dkpro-cassis 0.12, ``Cas.select``, ``select_covered`` and what uses them
(``Cas._get_feature_structures`` and ``_get_feature_structures_in_range``) put the
names of a type and its subtypes in a set and walk that set. Two things then change
with ``PYTHONHASHSEED``, that is from one run to the next:

- the order of the result: ``select(Constituent)`` gives the ROOTs before or after
  the other constituents, ``select(NamedEntity)`` the GeneMentions before or after
  the AnatomyMentions; whatever is built in that order changes with it;
- the order of a view's indexes: reading ``type_index[name]`` of its defaultdict
  creates an empty index for every subtype the view holds none of, in the set's
  order, and the indexes stay in the order they were created. ``select_all_fs``,
  cassis's XMI serializer and :mod:`casflow.cas.xmi` walk the indexes in that order
  to give xmi:ids: a combiner's ``select(Constituent)`` on its empty target view
  decided whether ``xmi.dkpro.writer.v1`` wrote the ROOTs or the other constituents
  first.

The replacements return the same feature structures, the type's own first, then
each subtype's by type name, and read the indexes without creating any. A view's
indexes are then in the order annotations of each type were first added, which the
components decide. Only with a cassis release :mod:`casflow.cas.cassis_version`
lists (it reads cassis internals); ``CASFLOW_CASSIS_FAST_PATHS`` does not turn it off,
it is not a fast path.
"""

from __future__ import annotations

import logging
from typing import Any

import cassis

from casflow.cas import cassis_version

logger = logging.getLogger(__name__)

_ORIGINAL = "_casflow_unordered"


def _type_names(type_: Any) -> list[str]:
    """The type's name, then its subtypes' (all levels) by name."""
    descendants = iter(type_.descendants)
    first = next(descendants)
    return [first.name, *sorted(t.name for t in descendants)]


def _get_feature_structures(self: cassis.Cas, type_: Any) -> list[Any]:
    index = self._current_view.type_index
    result: list[Any] = []
    for name in _type_names(type_):
        found = index.get(name)  # get: no empty index created for a type the view lacks
        if found:
            result.extend(found)
    return result


def _get_feature_structures_in_range(
    self: cassis.Cas, type_: Any, begin: int, end: int
) -> list[Any]:
    # As cassis: every annotation whose (begin, end) key lies in the window, for the
    # caller to check the bounds.
    index = self._current_view.type_index
    result: list[Any] = []
    for name in _type_names(type_):
        annotations = index.get(name)
        if not annotations:
            continue
        first = annotations.bisect_key_left((begin, begin))
        last = annotations.bisect_key_right((end, end))
        result.extend(annotations[first:last])
    return result


def _applicable() -> bool:
    return (
        cassis_version.cassis_release() in cassis_version.TESTED_RELEASES
        and hasattr(cassis.Cas, "_get_feature_structures")
        and hasattr(cassis.Cas, "_get_feature_structures_in_range")
    )


def apply() -> bool:
    """Replace the two cassis methods (once); whether they are replaced."""
    if hasattr(cassis.Cas, _ORIGINAL):
        return True
    if not _applicable():
        release = cassis_version.cassis_release()
        shown = "unknown" if release is None else f"{release[0]}.{release[1]}"
        logger.info(
            "dkpro-cassis %s is not a release casflow was checked against: select() of a "
            "type with subtypes keeps cassis's order, which changes with PYTHONHASHSEED "
            "(set it to make outputs reproducible)",
            shown,
        )
        return False
    setattr(
        cassis.Cas,
        _ORIGINAL,
        (cassis.Cas._get_feature_structures, cassis.Cas._get_feature_structures_in_range),
    )
    cassis.Cas._get_feature_structures = _get_feature_structures
    cassis.Cas._get_feature_structures_in_range = _get_feature_structures_in_range
    return True
