"""The compiled dictionary, built once per process and kept on disk between runs.

Parsing UBERON and building the trie takes seconds; a worker process should not
pay it again. The compiled form is pickled under a name made from the
fingerprint of the OBO files' bytes, the compile settings and
:data:`FORMAT_VERSION`, so a changed file or setting compiles anew and stale
files are simply never read again. Within a process the dictionary is kept in
memory by the same fingerprint.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from collections.abc import Sequence
from pathlib import Path

from casflow.components.dictionary.entries import CompileSettings, Dictionary, compile_dictionary
from casflow.pipeline.files import atomic_write_bytes
from casflow.pipeline.fingerprints import fingerprint

#: raise when the compiled form or the normalisation changes, so old caches are ignored
FORMAT_VERSION = 2

_IN_MEMORY: dict[str, Dictionary] = {}


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/casflow/dictionary`` (``~/.cache/casflow/dictionary`` by default)."""
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "casflow" / "dictionary"


def dictionary_fingerprint(paths: Sequence[Path], settings: CompileSettings) -> str:
    return fingerprint(
        {"format": FORMAT_VERSION, "settings": settings.as_json(), "files": len(paths)},
        files=paths,
    )


def load_dictionary(
    paths: Sequence[Path], settings: CompileSettings, cache_dir: Path | None
) -> Dictionary:
    """The dictionary of ``paths`` under ``settings``: from memory, from ``cache_dir``,
    or compiled (and then written there). ``cache_dir`` None: no disk cache."""
    key = dictionary_fingerprint(paths, settings)
    if key in _IN_MEMORY:
        return _IN_MEMORY[key]
    cached = cache_dir / f"{key}.pickle" if cache_dir is not None else None
    dictionary = _read(cached) if cached is not None else None
    if dictionary is None:
        dictionary = compile_dictionary(paths, settings)
        if dictionary_fingerprint(paths, settings) != key:
            # a file changed between the fingerprint and the compiling: the dictionary may
            # be of either version (or a mix), so it is kept under neither name
            return dictionary
        if cached is not None:
            # a read-only cache folder costs time, not correctness
            with contextlib.suppress(OSError):
                atomic_write_bytes(cached, pickle.dumps(dictionary, pickle.HIGHEST_PROTOCOL))
    _IN_MEMORY[key] = dictionary
    return dictionary


def _read(path: Path) -> Dictionary | None:
    try:
        with path.open("rb") as handle:
            loaded = pickle.load(handle)
    except Exception:
        # a damaged pickle raises almost anything (ValueError, KeyError, ...): the
        # dictionary is compiled anew and the file overwritten, never an error forever
        return None
    return loaded if isinstance(loaded, Dictionary) else None
