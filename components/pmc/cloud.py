"""The layout of PMC's Cloud Service (the ``pmc-oa-opendata`` bucket), read through fsspec.

Since 2026 PMC distributes its article datasets one article version per prefix,
as the bucket's README describes::

    <root>/PMC10009416.1/PMC10009416.1.xml    JATS XML
                        PMC10009416.1.txt    plain text extracted from the XML
                        PMC10009416.1.json   metadata (also under <root>/metadata/)
                        PMC10009416.1.pdf, images, supplementary files (some articles)
    <root>/metadata/PMC10009416.1.json
    <root>/inventory-reports/pmc-oa-opendata/metadata/<date>/manifest.json
    <root>/inventory-reports/pmc-oa-opendata/metadata/data/<uuid>.csv.gz

The metadata JSON holds ``pmcid``, ``version``, ``pmid``, ``doi``, ``title``,
``citation``, ``is_pmc_openaccess``, ``is_manuscript``, ``is_historical_ocr``,
``is_retracted``, ``license_code`` (a Creative Commons code such as ``CC BY``, or
``TDM``) and the S3 URLs of the files. The inventory, regenerated daily, has one
CSV row per metadata object: bucket, key, last-modified time, ETag (the ETag
changes whenever any file of that article version changes).

This module knows nothing of CAS: it lists article versions, picks the latest
of each PMCID, reads the metadata and filters on it. ``root`` is any fsspec URL
(a local folder, ``s3://pmc-oa-opendata``, ``memory://...``).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import fsspec
from fsspec.spec import AbstractFileSystem

from casflow.pipeline.component import DocumentError

INVENTORY_DIR = "inventory-reports/pmc-oa-opendata/metadata"
METADATA_DIR = "metadata"

# An article version prefix (PMC13901.1) or a metadata key (metadata/PMC13901.1.json).
_VERSION_NAME = re.compile(r"(PMC\d+)\.(\d+)\Z")
_METADATA_KEY = re.compile(r"(?:^|/)(PMC\d+)\.(\d+)\.json\Z")
_ARTICLE = re.compile(r"\A(PMC\d+)(?:\.(\d+))?\Z")
# Inventory report folders are named by their time (2026-01-18T01-00Z); "data" and
# "hive" beside them are not reports.
_REPORT_DIR = re.compile(r"\A\d{4}-\d{2}-\d{2}T")
_TIMESTAMP = re.compile(r"\A\d{4}-\d{2}-\d{2}")

# How many metadata objects are fetched at once: fsspec fetches a list of paths
# concurrently on object stores, one after another on a local disk.
METADATA_BATCH = 256


class PmcLayoutError(DocumentError, ValueError):
    hint = (
        "check that the input is the root of a PMC Cloud Service mirror (folders named "
        "PMC<id>.<version>, each with PMC<id>.<version>.xml and .json) and that the "
        "inventory is the one of that mirror"
    )


@dataclass(frozen=True, order=True)
class ArticleVersion:
    """One article version of the mirror; ``last_modified``/``etag`` come from the inventory."""

    number: int  # the PMCID's number, first so that versions sort by PMCID, then version
    version: int
    last_modified: str | None = None
    etag: str | None = None

    @property
    def pmcid(self) -> str:
        return f"PMC{self.number}"

    @property
    def name(self) -> str:
        """``PMC13901.1``: the prefix and the stem of its files."""
        return f"{self.pmcid}.{self.version}"


def parse_article(text: str) -> tuple[str, int | None]:
    """``"PMC123"`` -> ("PMC123", None); ``"PMC123.2"`` -> ("PMC123", 2); also ``123``."""
    value = text.strip()
    if value[:1].isdigit():
        value = f"PMC{value}"
    match = _ARTICLE.match(value.upper())
    if match is None:
        raise PmcLayoutError(f"{text!r} is not a PMCID or PMCID.version (write PMC123 or PMC123.2)")
    return match.group(1), int(match.group(2)) if match.group(2) else None


def _version_of(pmcid: str, version: int, **extra: Any) -> ArticleVersion:
    return ArticleVersion(int(pmcid[3:]), version, **extra)


@dataclass(frozen=True)
class ArticleMetadata:
    """The fields of an article version's metadata JSON that casflow uses."""

    pmcid: str
    version: int
    pmid: str | None
    doi: str | None
    title: str | None
    license_code: str | None
    is_retracted: bool | None
    is_manuscript: bool | None
    is_pmc_openaccess: bool | None
    last_updated: str | None  # not in PMC's field list; kept when a JSON has it

    @classmethod
    def from_json(cls, data: bytes, where: str) -> ArticleMetadata:
        try:
            record = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise PmcLayoutError(f"{where}: the metadata is not JSON ({exc})") from exc
        if not isinstance(record, dict) or not record.get("pmcid") or "version" not in record:
            raise PmcLayoutError(f"{where}: the metadata has no 'pmcid' and 'version'")
        try:
            version = int(record["version"])
        except (TypeError, ValueError):
            raise PmcLayoutError(
                f"{where}: 'version' is {record['version']!r}, not a number"
            ) from None

        def text(key: str) -> str | None:
            value = record.get(key)
            return None if value is None or value == "" else str(value)

        def flag(key: str) -> bool | None:
            # A flag read as "not set" from an unexpected form would let a retracted
            # article through the retraction filter without a word.
            value = record.get(key)
            if value is None or isinstance(value, bool):
                return value
            if isinstance(value, int) and value in (0, 1):
                return bool(value)
            if isinstance(value, str) and value.strip().lower() in ("true", "false"):
                return value.strip().lower() == "true"
            raise PmcLayoutError(f"{where}: {key!r} is {value!r}, not true or false")

        return cls(
            pmcid=str(record["pmcid"]).upper(),
            version=version,
            pmid=text("pmid"),
            doi=text("doi"),
            title=text("title"),
            license_code=text("license_code"),
            is_retracted=flag("is_retracted"),
            is_manuscript=flag("is_manuscript"),
            is_pmc_openaccess=flag("is_pmc_openaccess"),
            last_updated=text("last_updated"),
        )


def normalize_license(code: str) -> str:
    """``cc-by`` / ``CC BY`` / ``cc_by`` -> ``CC BY`` (PMC writes Creative Commons codes
    with a space after CC and hyphens between the terms: ``CC BY-NC-SA``)."""
    words = re.split(r"[\s_-]+", code.strip().upper())
    if len(words) > 1 and words[0] == "CC":
        return "CC " + "-".join(words[1:])
    return "-".join(words)


class PmcMirror:
    """A local or remote copy of the PMC Cloud Service layout."""

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        self.url = url
        self.storage_options = dict(storage_options or {})
        fs, root = fsspec.core.url_to_fs(url, **self.storage_options)
        self.fs: AbstractFileSystem = fs
        self.root = root.rstrip("/")
        self.is_local = "file" in _protocols(fs)

    # ------------------------------------------------------------------ paths

    def path(self, *parts: str) -> str:
        return "/".join([self.root, *parts]) if self.root else "/".join(parts)

    def file_path(self, article: ArticleVersion, suffix: str) -> str:
        return self.path(article.name, f"{article.name}{suffix}")

    def uri(self, path: str) -> str:
        """What a worker opens: a plain path on a local disk, else the full URL."""
        return path if self.is_local else self.fs.unstrip_protocol(path)

    # ------------------------------------------------------------------ listing

    def list_versions(self) -> list[ArticleVersion]:
        """Every article version prefix under the root (a listing of the whole mirror:
        on the S3 bucket about 8 million prefixes; use the inventory there)."""
        if not self.fs.isdir(self.root):
            raise PmcLayoutError(f"{self.url}: no such folder")
        found = []
        for entry in self.fs.ls(self.root, detail=False):
            match = _VERSION_NAME.match(str(entry).rstrip("/").rsplit("/", 1)[-1])
            if match:
                found.append(_version_of(match.group(1), int(match.group(2))))
        return sorted(found)

    def versions_of(self, pmcid: str) -> list[ArticleVersion]:
        """The article versions of one PMCID (a prefix listing on an object store)."""
        found = []
        for entry in self.fs.glob(self.path(f"{pmcid}.*")):
            match = _VERSION_NAME.match(str(entry).rstrip("/").rsplit("/", 1)[-1])
            if match and match.group(1) == pmcid:
                found.append(_version_of(pmcid, int(match.group(2))))
        return sorted(found)

    # ------------------------------------------------------------------ metadata

    def read_metadata(
        self, articles: Sequence[ArticleVersion]
    ) -> Iterator[tuple[ArticleVersion, ArticleMetadata | None, str | None]]:
        """``(article, metadata, error)`` for each article, fetched in batches.

        The metadata is the JSON beside the article's XML, else the one under
        ``metadata/``; ``error`` says why neither could be used.
        """
        for start in range(0, len(articles), METADATA_BATCH):
            batch = articles[start : start + METADATA_BATCH]
            paths = [self.file_path(a, ".json") for a in batch]
            fetched = _cat_all(self.fs, paths)
            for article, path in zip(batch, paths, strict=True):
                data = fetched[path]
                if isinstance(data, BaseException):
                    fallback = self.path(METADATA_DIR, f"{article.name}.json")
                    try:
                        data, path = self.fs.cat_file(fallback), fallback
                    except (OSError, KeyError) as exc:
                        yield article, None, self._missing_metadata(article, exc)
                        continue
                try:
                    meta = ArticleMetadata.from_json(data, self.uri(path))
                except PmcLayoutError as exc:
                    yield article, None, str(exc)
                    continue
                if (meta.pmcid, meta.version) != (article.pmcid, article.version):
                    yield (
                        article,
                        None,
                        (
                            f"{self.uri(path)}: the metadata names {meta.pmcid}.{meta.version}, "
                            f"not {article.name}"
                        ),
                    )
                    continue
                yield article, meta, None

    def _missing_metadata(self, article: ArticleVersion, exc: BaseException) -> str:
        prefix = self.path(article.name)
        if not self.fs.exists(prefix):
            # Listed (by an inventory) but never downloaded: say so, not only which
            # JSON files could not be read.
            return (
                f"{self.uri(prefix)}: {article.name} is listed but not in the mirror (no "
                f"folder {article.name}/ nor metadata/{article.name}.json); download it "
                f"(aws s3 sync s3://pmc-oa-opendata/{article.name}/ ...) or read the mirror "
                "with the inventory it was synced from"
            )
        return (
            f"{self.uri(prefix)}: no metadata for {article.name} (neither "
            f"{article.name}/{article.name}.json nor metadata/{article.name}.json could be "
            f"read: {exc})"
        )

    # ------------------------------------------------------------------ inventory

    def latest_inventory(self, folder: str | None = None) -> str:
        """The manifest of the newest inventory report under ``folder``
        (default: the mirror's own ``inventory-reports/pmc-oa-opendata/metadata``)."""
        fs, base = (self.fs, self.path(INVENTORY_DIR)) if folder is None else _fs_of(folder, self)
        try:
            entries = fs.ls(base, detail=False)
        except (FileNotFoundError, OSError) as exc:
            raise PmcLayoutError(f"{_show(fs, base)}: no inventory reports ({exc})") from exc
        reports = sorted(
            name
            for name in (str(e).rstrip("/").rsplit("/", 1)[-1] for e in entries)
            if _REPORT_DIR.match(name)
        )
        if not reports:
            raise PmcLayoutError(
                f"{_show(fs, base)}: no inventory report folders (named like 2026-01-18T01-00Z)"
            )
        return fs.unstrip_protocol(f"{base.rstrip('/')}/{reports[-1]}/manifest.json")

    def read_inventory(self, spec: str) -> list[ArticleVersion]:
        """The article versions an inventory lists, with their time and ETag.

        ``spec`` is ``latest`` (the mirror's newest report), a report folder of
        dated reports (its newest), a ``manifest.json``, or a CSV (``.csv.gz``) file.
        """
        if spec == "latest":
            spec = self.latest_inventory()
        fs, path = _fs_of(spec, self)
        if fs.isdir(path):
            spec = self.latest_inventory(spec)
            fs, path = _fs_of(spec, self)
        schema: list[str] | None = None
        if path.endswith(".json"):
            csv_paths, schema = self._manifest_files(fs, path)
        else:
            csv_paths = [(fs, path)]
        found: dict[tuple[int, int], ArticleVersion] = {}
        for csv_fs, csv_path in csv_paths:
            for article in _read_inventory_csv(csv_fs, csv_path, schema):
                found[(article.number, article.version)] = article
        return sorted(found.values())

    def _manifest_files(
        self, fs: AbstractFileSystem, manifest: str
    ) -> tuple[list[tuple[AbstractFileSystem, str]], list[str] | None]:
        """The manifest's CSV files, and its ``fileSchema`` (the CSV's column names,
        e.g. ``Bucket, Key, Size, LastModifiedDate, ETag``) when it gives one."""
        try:
            record = json.loads(fs.cat_file(manifest))
            keys = [str(f["key"]) for f in record["files"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise PmcLayoutError(
                f"{_show(fs, manifest)}: not an S3 inventory manifest (a 'files' list of "
                f"'key's): {exc}"
            ) from exc
        schema = record.get("fileSchema")
        columns = [c.strip() for c in schema.split(",")] if isinstance(schema, str) else None
        if columns is not None and "key" not in {c.lower() for c in columns}:
            raise PmcLayoutError(
                f"{_show(fs, manifest)}: its fileSchema {schema!r} names no Key column"
            )
        paths = []
        for key in keys:
            # Keys are the bucket's; a report copied elsewhere keeps its data/ folder
            # beside the dated folders.
            beside = manifest.rsplit("/", 2)[0] + "/data/" + key.rsplit("/", 1)[-1]
            in_mirror = self.path(key)
            if fs is self.fs and self.fs.exists(in_mirror):
                paths.append((self.fs, in_mirror))
            elif fs.exists(beside):
                paths.append((fs, beside))
            else:
                raise PmcLayoutError(
                    f"{_show(fs, manifest)}: the inventory file {key} is neither in the "
                    f"mirror nor at {_show(fs, beside)}"
                )
        return paths, columns


def _read_inventory_csv(
    fs: AbstractFileSystem, path: str, schema: Sequence[str] | None = None
) -> Iterator[ArticleVersion]:
    """The article versions of one inventory CSV. ``schema`` (the manifest's column
    names) says which cell is the key, the time and the ETag; without it they are told
    apart by their form, which cannot tell an ETag from a Size or other column."""
    try:
        data = fs.cat_file(path)
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        text = data.decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError, gzip.BadGzipFile) as exc:
        raise PmcLayoutError(f"{_show(fs, path)}: cannot read the inventory: {exc}") from exc
    columns = None if schema is None else {name.lower(): i for i, name in enumerate(schema)}
    for n, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or row[0].startswith("#"):
            continue
        if columns is not None and len(row) > columns["key"]:
            key: str | None = row[columns["key"]]
            if not _METADATA_KEY.search(key or ""):
                key = None
        else:
            key = next((cell for cell in row if _METADATA_KEY.search(cell)), None)
        if key is None:
            if n == 1:  # a header row
                continue
            raise PmcLayoutError(
                f"{_show(fs, path)}:{n}: no metadata key (metadata/PMC<id>.<version>.json) "
                f"in {row!r}"
            )
        match = _METADATA_KEY.search(key)
        assert match is not None
        if columns is not None:
            if len(row) != len(columns):
                raise PmcLayoutError(
                    f"{_show(fs, path)}:{n}: {len(row)} cells, but the manifest's fileSchema "
                    f"names {len(columns)} columns ({', '.join(schema or ())})"
                )
            last_modified = (
                row[columns["lastmodifieddate"]] if "lastmodifieddate" in columns else None
            )
            etag = row[columns["etag"]].strip('"') if "etag" in columns else None
        else:
            rest = [cell for cell in row if cell is not key and cell != row[0]]
            # PMC's README lists bucket, key, ETag, last modified; its example rows have
            # the time before the ETag. Tell them apart by their form.
            last_modified = next((c for c in rest if _TIMESTAMP.match(c)), None)
            etag = next((c.strip('"') for c in rest if c is not last_modified), None)
        yield _version_of(
            match.group(1), int(match.group(2)), last_modified=last_modified, etag=etag
        )


def latest_per_article(articles: Iterable[ArticleVersion]) -> list[ArticleVersion]:
    """The highest version of each PMCID, in PMCID order."""
    latest: dict[int, ArticleVersion] = {}
    for article in articles:
        kept = latest.get(article.number)
        if kept is None or article.version > kept.version:
            latest[article.number] = article
    return [latest[number] for number in sorted(latest)]


def parse_time(text: str) -> datetime:
    """An ISO date or time (``2026-11-15``, ``2026-11-15 11:00``,
    ``2026-11-15T10:00:00.700Z``) as an aware datetime; UTC when it names no zone.

    Compared as strings, a space sorts before ``T`` and ``Z`` after ``.``, so times
    written in different forms were ordered wrongly.
    """
    stamp = datetime.fromisoformat(text.strip())
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def changed_since(
    articles: Iterable[ArticleVersion],
    since: str | None = None,
    previous: Iterable[ArticleVersion] | None = None,
) -> list[ArticleVersion]:
    """Articles modified after ``since`` (an ISO time, UTC unless it names a zone) or
    absent from / with another ETag than in ``previous`` (an older inventory). An
    article without a time in the inventory is not known to have changed."""
    known = None if previous is None else {(a.number, a.version): a.etag for a in previous}
    after = None if since is None else parse_time(since)
    kept = []
    for article in articles:
        if after is not None:
            if article.last_modified is None:
                continue
            try:
                modified = parse_time(article.last_modified)
            except ValueError as exc:
                raise PmcLayoutError(
                    f"{article.name}: the inventory's time {article.last_modified!r} is not an "
                    "ISO time"
                ) from exc
            if modified <= after:
                continue
        key = (article.number, article.version)
        if known is not None and key in known and known[key] == article.etag:
            continue
        kept.append(article)
    return kept


def _protocols(fs: AbstractFileSystem) -> tuple[str, ...]:
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


def _fs_of(spec: str, mirror: PmcMirror) -> tuple[AbstractFileSystem, str]:
    """The file system and path of ``spec``, with the mirror's storage options when it
    is on the same kind of store."""
    fs, path = fsspec.core.url_to_fs(spec, **_options_for(spec, mirror))
    return fs, path.rstrip("/")


def _options_for(spec: str, mirror: PmcMirror) -> dict[str, Any]:
    scheme = spec.split("://", 1)[0] if "://" in spec else "file"
    return mirror.storage_options if scheme in _protocols(mirror.fs) else {}


def _show(fs: AbstractFileSystem, path: str) -> str:
    return path if "file" in _protocols(fs) else fs.unstrip_protocol(path)


def _cat_all(fs: AbstractFileSystem, paths: list[str]) -> dict[str, bytes | BaseException]:
    """The bytes of each path (an exception where one cannot be read)."""
    try:
        result = fs.cat(paths, on_error="return")
    except (OSError, KeyError):
        result = {}
    if not isinstance(result, dict):  # a single path gives its bytes
        result = {paths[0]: result}
    # Keys come back as the file system spells them; map them onto ours.
    by_name = {fs._strip_protocol(k): v for k, v in result.items()}
    return {p: by_name.get(fs._strip_protocol(p), FileNotFoundError(p)) for p in paths}
