"""Finding input documents: a file, a folder (recursive), a glob, a list file, or
``.tar.gz`` archives of them (as PMC distributes its bulk packages).

Shared by every file-based reader so that all of them accept the same
``input`` forms and derive document ids the same way. Order is sorted by path,
so the document order (and everything derived from it) is stable across runs.
"""

from __future__ import annotations

import fnmatch
import glob
import itertools
import os
import posixpath
import stat
import tarfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from casflow.pipeline.component import DocumentError

IdStyle = Literal["stem", "relative_path"]


class InputNotFoundError(FileNotFoundError):
    pass


class InputUnreadableError(DocumentError, OSError):
    """A listed input cannot be read when a worker loads it."""

    hint = (
        "the file was there when the run listed its inputs but cannot be read now (moved, "
        "deleted, or its permissions changed); restore it and run again: only the documents "
        "that failed are processed"
    )


def read_document_bytes(path: str) -> bytes:
    """The bytes of a listed input file, with an error that says what to do if it is gone."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InputUnreadableError(f"{path}: cannot read: {exc.strerror or exc}") from exc


#: How a relative input is found, for messages about one that is not.
RELATIVE_PATHS = (
    "a relative path is taken from the working directory, else from the workflow "
    "file's folder; environment variables such as $HOME are not expanded"
)


def resolve_input(input_spec: str, base_dir: Path | None = None) -> str:
    if input_spec.startswith("@"):  # a list file is found as any other path is
        return "@" + resolve_input(input_spec[1:], base_dir)
    path = Path(input_spec).expanduser()
    if not path.is_absolute() and base_dir is not None and not path.exists():
        # Relative inputs are taken from the working directory first, then from
        # the workflow's folder, so a workflow can name files beside itself; a glob
        # too, when it matches nothing from the working directory.
        if glob.has_magic(input_spec):
            beside = str(Path(glob.escape(str(base_dir))) / path)
            return beside if not _any_match(str(path)) and _any_match(beside) else str(path)
        candidate = base_dir / path
        if candidate.exists():
            return str(candidate)
    return str(path)


def _any_match(pattern: str) -> bool:
    return any(os.path.isfile(p) for p in glob.iglob(pattern, recursive=True))


def iter_input_files(
    input_spec: str, pattern: str, *, missing_listed_ok: bool = False
) -> Iterator[tuple[Path, Path]]:
    """Yield ``(file, root)`` pairs; ``root`` is what relative ids are taken from.

    ``input_spec`` is a file, a folder (searched recursively with ``pattern``),
    a glob (``data/**/*.nxml``) or ``@list.txt`` (one path per line, relative
    to the list file; ``#`` comments and blank lines ignored). A listed file that
    does not exist raises InputNotFoundError, or with ``missing_listed_ok`` is
    yielded all the same: a run's listing, whose caller makes it a failed document
    (validation found every listed file; one gone since must not stop the run).
    """
    if input_spec.startswith("@"):
        list_file = Path(input_spec[1:])
        if not list_file.is_file():
            raise InputNotFoundError(f"input list {list_file} does not exist")
        for n, line, path in _listed(list_file):
            if not missing_listed_ok and not path.is_file():
                raise InputNotFoundError(f"{list_file}:{n}: listed input {line!r} does not exist")
            yield path, list_file.parent
        return
    path = Path(input_spec)
    if path.is_file():
        yield path, path.parent
        return
    if path.is_dir():
        for found, _ in _walk_sorted(path, pattern):
            yield found, path
        return
    if glob.has_magic(input_spec):
        matches = sorted(
            (p for p in glob.glob(input_spec, recursive=True) if os.path.isfile(p)),
            key=_path_order,
        )
        root = Path(glob.escape(input_spec).split("*")[0] or ".")
        root = root if root.is_dir() else root.parent
        for name in matches:
            yield Path(name), root
        return
    raise InputNotFoundError(
        f"input {input_spec!r} is not a file, folder, glob or @list file; check the path "
        f"({RELATIVE_PATHS})"
    )


def _listed(list_file: Path) -> Iterator[tuple[int, str, Path]]:
    """``(line number, entry, path)`` of each entry of a list file, relative paths
    taken from the list's folder."""
    # Read as the run goes: a list of millions of inputs is never held whole.
    with open(list_file, encoding="utf-8") as lines:
        for n, line in enumerate(lines, start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            yield n, line, Path(line) if Path(line).is_absolute() else list_file.parent / line


#: Missing entries of a list file named one by one; the rest are counted.
MISSING_SHOWN = 10


def _list_problems(list_file: Path) -> list[str]:
    """Every entry of a list file that is not a file (the first few named, the rest
    counted), so that one validation finds them all."""
    problems: list[str] = []
    missing = 0
    for n, line, path in _listed(list_file):
        if not path.is_file():
            missing += 1
            if missing <= MISSING_SHOWN:
                problems.append(f"{list_file}:{n}: listed input {line!r} does not exist")
    if missing > MISSING_SHOWN:
        problems.append(
            f"{list_file}: {missing - MISSING_SHOWN} more listed inputs do not exist "
            f"({missing} in all); fix or remove those lines"
        )
    return problems


def _path_order(path: str) -> tuple[str, ...]:
    """Sort key giving the order of sorted Path objects (part by part).

    Matches are held as strings while they are processed: a Path holds its parts
    as well, interned, which a run over millions of inputs would keep.
    """
    return Path(path).parts


def document_id(path: Path, root: Path, style: IdStyle) -> str:
    if style == "relative_path":
        try:
            rel = path.relative_to(root)
        except ValueError:
            rel = Path(path.name)
        return str(rel.with_suffix("")).replace("\\", "/")
    return path.stem


def input_problems(
    input_spec: str | None, pattern: str, output_dir: Path | None = None
) -> list[str]:
    """Validation-time check: the input exists and matches at least one file (every
    entry of a list file exists), and ``output_dir`` is not inside an input folder."""
    if not input_spec:
        return ["no input given: set 'input' in the reader config or pass --input"]
    if input_spec.startswith("@") and Path(input_spec[1:]).is_file():
        problems = _list_problems(Path(input_spec[1:]))
        if problems:
            return problems
    try:
        for _ in iter_input_items(input_spec, pattern):
            return _output_inside_input(input_spec, output_dir)
    except InputNotFoundError as exc:
        return [str(exc)]
    if glob.has_magic(input_spec) and not Path(input_spec).exists():
        # a glob names its files itself: the reader's pattern plays no part
        return [f"input {input_spec!r} matches no files ({RELATIVE_PATHS})"]
    return [f"input {input_spec!r} matches no files (pattern {pattern!r})"]


def _output_inside_input(input_spec: str, output_dir: Path | None) -> list[str]:
    """An output folder inside the input folder would have the next run read this
    run's outputs (its TypeSystem.xml, its XMI, a brat writer's .txt) as input. So
    would one a glob reaches into. A list names its files and is left to the user."""
    folder = Path(input_spec)
    if output_dir is None or input_spec.startswith("@"):
        return []
    if not folder.is_dir():
        return _output_in_glob(input_spec, output_dir) if glob.has_magic(input_spec) else []
    inside, outside = output_dir.resolve(), folder.resolve()
    if inside != outside and outside not in inside.parents:
        return []
    return [
        f"the output folder {output_dir} is inside the input folder {folder}: the next run "
        "would read this run's outputs as input; choose an output folder outside it (--output)"
    ]


def _output_in_glob(pattern: str, output_dir: Path) -> list[str]:
    """The problem when the glob ``pattern`` can match files below ``output_dir``.

    Judged from the pattern's parts below its fixed folder, part by part along the
    output folder's path: ``**`` reaches every depth, a part that does not match the
    output's folder there cannot reach it, and parts left below the output folder
    match files inside it.
    """
    parts = Path(pattern).parts
    fixed = next(i for i, part in enumerate(parts) if glob.has_magic(part))
    top = Path(*parts[:fixed]) if fixed else Path(".")
    try:
        below = output_dir.resolve().relative_to(top.resolve()).parts
    except ValueError:
        return []
    for depth, part in enumerate(parts[fixed:]):
        if part == "**" or depth >= len(below):
            break
        if not fnmatch.fnmatchcase(below[depth], part):
            return []
    else:
        return []
    return [
        f"the output folder {output_dir} is where the input glob {pattern!r} looks for "
        "files: the next run would read this run's outputs as input; choose an output "
        "folder outside it (--output), or a glob that does not reach it"
    ]


ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")
#: Archives looked for in an input folder whatever its pattern, after its files.
_ARCHIVE_GLOBS = tuple(f"*{suffix}" for suffix in ARCHIVE_SUFFIXES)


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


@dataclass(frozen=True)
class InputItem:
    """One input document: a file, or a member of an archive (with its bytes)."""

    path: Path  # the file, or the member's path inside the archive
    root: Path  # what relative ids are taken from
    uri: str  # "file" or "archive.tar.gz!member/path"
    data: bytes | None = None
    size: int = 0
    error: str | None = None  # set for an input that cannot be read at all


def expand_braces(pattern: str) -> list[str]:
    """``**/*.{nxml,xml}`` -> ``["**/*.nxml", "**/*.xml"]`` (glob and fnmatch have no
    alternatives; the first ``{...}`` group is expanded, then the rest)."""
    start = pattern.find("{")
    end = pattern.find("}", start + 1)
    if start < 0 or end < 0:
        return [pattern]
    head, tail = pattern[:start], pattern[end + 1 :]
    return [
        expanded
        for choice in pattern[start + 1 : end].split(",")
        for expanded in expand_braces(head + choice + tail)
    ]


def name_matches(name: str, name_glob: str) -> bool:
    """Whether a file name matches a name glob that may hold ``{a,b}`` alternatives."""
    return any(fnmatch.fnmatchcase(name, one) for one in expand_braces(name_glob))


def _walk_sorted(root: Path, pattern: str) -> Iterator[tuple[Path, Path]]:
    """Files under ``root`` matching ``pattern``, in sorted-path order, listed lazily.

    ``**/NAME-GLOB`` (any depth) is walked one directory at a time, entries
    sorted by name, which is the order of ``sorted(root.glob(pattern))`` (paths
    compare part by part). Other patterns use glob.
    """
    name_glob = pattern[3:] if pattern.startswith("**/") else None
    if name_glob is None or "/" in name_glob or "**" in name_glob:
        matches = {
            str(p)
            for one in expand_braces(pattern)
            for p in root.glob(one)
            if p.is_file() or (p.is_symlink() and not p.exists())  # broken: fails by name
        }
        for found in sorted(matches, key=_path_order):
            yield Path(found), root
        return
    name_globs = expand_braces(name_glob)

    def walk(folder: Path, above: frozenset[tuple[int, int]]) -> Iterator[tuple[Path, Path]]:
        # A folder's listing is held while its documents are processed, so it keeps
        # only names and a byte per entry: a DirEntry holds two strings and, once it
        # has followed a symlink, its stat result (about 0.9 KB per document in all).
        try:
            info = os.stat(folder)
            # A link to a folder the walk is inside (``sub/up -> ..``) would list the
            # same files again under ever longer paths until the system's link limit:
            # some 40 copies of each document. Its files are listed already, from
            # the real path, so the link is passed over.
            here = (info.st_dev, info.st_ino)
            if here in above:
                return
            above = above | {here}
            with os.scandir(folder) as scan:
                listing = sorted((entry.name, _entry_kind(entry)) for entry in scan)
        except OSError:
            return
        names = [name for name, _ in listing]
        kinds = bytes(kind for _, kind in listing)
        del listing
        for name, kind in zip(names, kinds, strict=True):
            # Not ``folder / name``: pathlib interns the name it is given, and the
            # interned-string table would then grow with each name held here.
            path = Path(os.path.join(folder, name))
            if kind == _LINK:
                kind = _link_kind(path)
            if kind == _DIR:
                yield from walk(path, above)
            elif kind in (_FILE, _BROKEN) and any(fnmatch.fnmatchcase(name, g) for g in name_globs):
                # a broken link is listed too: reading it fails its document, by name,
                # where skipping it would lose a document without a word
                yield path, root

    yield from walk(root, frozenset())


# What a folder entry is, as _walk_sorted keeps it (one byte each).
_DIR, _FILE, _LINK, _OTHER, _BROKEN = range(5)


def _entry_kind(entry: os.DirEntry[str]) -> int:
    # From the listing's file types: no system call on most file systems. Symlinks
    # are followed only when walked to, so no stat result is kept per entry.
    if entry.is_symlink():
        return _LINK
    if entry.is_dir(follow_symlinks=False):
        return _DIR
    return _FILE if entry.is_file(follow_symlinks=False) else _OTHER


def _link_kind(path: Path) -> int:
    """The kind of what a symlink points to (``_BROKEN`` when it points nowhere)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return _BROKEN
    if stat.S_ISDIR(mode):
        return _DIR
    return _FILE if stat.S_ISREG(mode) else _OTHER


def iter_input_items(input_spec: str, pattern: str, archives: bool = True) -> Iterator[InputItem]:
    """Files as :func:`iter_input_files` finds them, with ``.tar.gz`` archives opened.

    Archive members are streamed (``tarfile`` in stream mode): nothing is
    unpacked to disk and only the member being yielded is in memory. A member
    is taken when its name matches the file part of ``pattern`` (``*.nxml``).
    """
    member_glob = pattern.rsplit("/", 1)[-1]
    seen_archives: set[Path] = set()
    path = Path(input_spec)
    candidates: Iterable[tuple[Path, Path]] = iter_input_files(
        input_spec, pattern, missing_listed_ok=True
    )
    if archives and path.is_dir():
        # Listed lazily, archives after the plain files, so a folder of millions
        # of files is never held as one list.
        candidates = itertools.chain(
            candidates,
            *(_walk_sorted(path, f"**/{suffix}") for suffix in _ARCHIVE_GLOBS),
        )
    for file, root in candidates:
        if archives and is_archive(file):
            if file in seen_archives:
                continue
            seen_archives.add(file)
            yield from _iter_archive(file, member_glob)
        else:
            try:
                size = file.stat().st_size
            except OSError as exc:  # vanished since it was listed, or a broken link
                error = f"{file}: cannot read: {exc}"
                if file.is_symlink():
                    error = (
                        f"{file}: a symbolic link to {os.readlink(file)}, which does not "
                        "exist; restore the file or remove the link"
                    )
                yield InputItem(file, root, str(file), error=error)
                continue
            yield InputItem(file, root, str(file), size=size)


def count_input_items(input_spec: str, pattern: str) -> int | None:
    """How many items :func:`iter_input_items` yields, counted from the names alone;
    None when an archive is among the inputs (its members are known only by reading
    it, as the run does) or the input cannot be listed."""
    path = Path(input_spec)
    count = 0
    try:
        for file, _ in iter_input_files(input_spec, pattern, missing_listed_ok=True):
            if is_archive(file):
                return None
            count += 1
        if path.is_dir():
            for suffix in _ARCHIVE_GLOBS:
                if next(_walk_sorted(path, f"**/{suffix}"), None) is not None:
                    return None
    except (OSError, UnicodeDecodeError):  # InputNotFoundError, an unreadable @list
        return None
    return count


def _member_path(name: str) -> Path | None:
    """An archive member's name as a path with its ``..`` parts resolved (``a/../b.txt``
    is ``b.txt``, as tar extracts it, so it has that file's id), or None when it leads
    above the archive's top (``../x.txt``). A leading ``/`` is kept: such a name is not
    relative to the archive, and its id falls back to the file name."""
    normal = posixpath.normpath(name)
    if normal == ".." or normal.startswith("../"):
        return None
    return Path(normal)


def _iter_archive(archive: Path, member_glob: str) -> Iterator[InputItem]:
    try:
        with tarfile.open(archive, mode="r|*") as tar:
            for member in tar:
                if not member.isfile() or not name_matches(Path(member.name).name, member_glob):
                    continue
                name = _member_path(member.name)
                if name is None:
                    yield InputItem(
                        # Named apart from the archive's other members: by its file
                        # name, it could take the id of one that is read.
                        Path(f"{archive.name}!{member.name.replace('/', '%2F')}"),
                        Path(""),
                        f"{archive}!{member.name}",
                        error=f"{archive}: member {member.name!r} is named by a path that "
                        "leads out of the archive ('..' above its top, as tar refuses to "
                        "extract); not read: its id would name files outside the folders "
                        "that outputs and imports are taken from. Repack the archive with "
                        "relative names (tar -C FOLDER -czf ARCHIVE .)",
                    )
                    continue
                handle = tar.extractfile(member)
                if handle is None:
                    continue
                data = handle.read()
                yield InputItem(
                    name,
                    Path(""),
                    f"{archive}!{member.name}",
                    data=data,
                    size=len(data),
                )
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        # Reported as a failed document of its own; the other inputs go on.
        yield InputItem(
            Path(f"{archive.name}.damaged"),
            Path(""),
            f"{archive}!",
            error=f"{archive}: cannot read the archive ({exc}); the documents before the damage "
            "were read; re-download the archive to process the rest",
        )
