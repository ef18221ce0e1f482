"""CAS helpers shared by the engine and the components, outside both.

- :mod:`casflow.cas.sofa`: set a view's text in memory proportional to the text;
- :mod:`casflow.cas.metadata`: DKPro DocumentMetaData of a view;
- :mod:`casflow.cas.xmi`: a fast XMI serializer, byte-identical to cassis's.

``sofa`` and ``xmi`` rely on internals of dkpro-cassis; each checks that the
internals it needs are there and otherwise falls back to cassis's public API.
"""
