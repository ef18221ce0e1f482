"""setuptools' build backend (``setuptools.build_meta``), minus one notice.

casflow maps flat folders onto ``casflow.*`` (``package-dir`` in pyproject.toml),
so setuptools makes editable installs with an import finder and then emits
``InformationOnly("Editable installation.")``: a reminder that a folder named like
the package in the working directory could shadow it. setuptools sends that notice
as a warning only because a build backend has no other channel to the user
(pypa/packaging-problems#558), and recent pip prints backend warnings for local
projects, so every ``pip install -e .`` would end in a warning box. casflow has no
such folder (tests/test_packaging.py checks that there is no top-level
``casflow/``), so the notice is dropped here; every other warning passes through.
"""

from __future__ import annotations

import warnings
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (the backend's other hooks, unchanged)
from setuptools.warnings import InformationOnly


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Editable installation", category=InformationOnly)
        return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
