"""CAS helpers shared by the engine and the components, outside both.

- :mod:`casflow.cas.sofa`: set a view's text in memory proportional to the text;
- :mod:`casflow.cas.metadata`: DKPro DocumentMetaData of a view;
- :mod:`casflow.cas.xmi`: a fast XMI serializer, byte-identical to cassis's;
- :mod:`casflow.cas.xmi_offsets`: XMI read with the UTF-16 offsets that split a
  character found (cassis only warns), and widened to whole characters on request;
- :mod:`casflow.cas.select_order`: cassis's ``select`` of a type with subtypes in the
  same order in every run (cassis's follows ``PYTHONHASHSEED``), applied on import of
  this package, which the engine and every CAS helper import.

``sofa`` and ``xmi`` rely on internals of dkpro-cassis; each checks that the
internals it needs are there and otherwise falls back to cassis's public API.
"""

from casflow.cas import select_order as _select_order

_select_order.apply()
