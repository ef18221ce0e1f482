"""``pmc.reader.v1``: articles from a mirror of PMC's Cloud Service, or the bucket itself.

The layout (one prefix per article version, metadata JSON, daily inventory) is
read by :mod:`casflow.components.pmc.cloud`; this module picks the article
versions (the latest of each PMCID unless a version is named), filters them by
licence and retraction from their metadata in the parent process, and in a
worker reads one article's JATS XML (or plain text) into the CAS with its
version, licence and identifiers as a ``casflow.metadata.ArticleVersion``.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import cassis
import fsspec
from pydantic import Field, model_validator

from casflow.cas.metadata import set_document_metadata
from casflow.cas.sofa import set_sofa_text
from casflow.components.formats.jats.reader import JatsLoader, jats_produces
from casflow.components.inputs import InputUnreadableError, read_document_bytes
from casflow.components.pmc.cloud import (
    ArticleMetadata,
    ArticleVersion,
    PmcLayoutError,
    PmcMirror,
    changed_since,
    latest_per_article,
    normalize_license,
    parse_article,
    parse_time,
)
from casflow.pipeline.component import (
    ComponentConfig,
    DocumentError,
    DocumentRef,
    DocumentWarning,
    Reader,
    RunContext,
)
from casflow.typesystem import ARTICLE_VERSION


class ArticlesLeftOut(DocumentWarning):
    """How many article versions the reader's filters (retractions, licences) left
    out: not damage, but what a run of a filtered mirror must say it did, and warnings
    are what the run report lists of its input."""


_TIME = re.compile(r"\A\d{4}-\d{2}-\d{2}([T ]\d{2}(:\d{2}(:\d{2}(\.\d+)?)?)?Z?)?\Z")


class PmcReaderConfig(ComponentConfig):
    input: str | None = Field(
        None,
        description="The mirror's root: a folder holding PMC<id>.<version>/ prefixes, or any "
        "fsspec URL (s3://pmc-oa-opendata needs s3fs: pip install 'casflow[s3]').",
    )
    storage_options: dict[str, Any] = Field(
        default_factory=dict,
        description="Options for the fsspec file system, e.g. {anon: true} for the public bucket.",
    )
    articles: list[str] = Field(
        default_factory=list,
        description="Only these articles: PMC123 (its latest version) or PMC123.2 (that version).",
    )
    articles_file: str | None = Field(
        None, description="A file with one PMCID or PMCID.version a line (# comments allowed)."
    )
    inventory: str | None = Field(
        None,
        description="List article versions from PMC's daily inventory instead of listing the "
        "mirror: 'latest' (the mirror's newest report), a report folder, a manifest.json or "
        "a .csv(.gz). Needed for 'since' and 'previous_inventory'.",
    )
    since: str | None = Field(
        None,
        description="Only article versions the inventory shows as changed after this time "
        "(ISO, e.g. 2026-11-10 or 2026-11-10T01:00:00Z).",
    )
    previous_inventory: str | None = Field(
        None,
        description="Only article versions new or changed (another ETag) since this older "
        "inventory (same forms as 'inventory'): what is new since a previous run.",
    )
    versions: Literal["latest", "all"] = Field(
        "latest", description="The latest version of each PMCID, or every version."
    )
    licenses: list[str] = Field(
        default_factory=list,
        description="Accepted licence codes from the metadata (e.g. ['CC BY', 'CC0']); "
        "empty: any licence.",
    )
    retracted: Literal["skip", "include", "only"] = Field(
        "skip", description="Retracted article versions: leave out, take too, or take only them."
    )
    text: Literal["xml", "txt"] = Field(
        "xml",
        description="Read the JATS XML (text with structure annotations) or PMC's plain text.",
    )
    id_style: Literal["pmcid_version", "pmcid"] = Field(
        "pmcid_version",
        description="Document id: PMC123.2 (a new version is a new document: a resumed run "
        "reads it), or PMC123 (needs versions: latest).",
    )
    back_matter: bool = Field(
        True, description="Include acknowledgements, back sections and appendices (xml)."
    )
    references: bool = Field(
        False, description="Include the reference list as Reference annotations (xml)."
    )
    citations: bool = Field(True, description="Annotate in-text bibliography citations (xml).")
    typography: bool = Field(False, description="Annotate italic/bold/sub/sup markup (xml).")
    language: str = Field("en", description="Document language written to the CAS.")
    huge_tree: bool = Field(
        False,
        description="Lift the XML parser's limits on nesting depth (256) and text node size "
        "(10 MB); for trusted files only (xml).",
    )

    @model_validator(mode="after")
    def _consistent(self) -> PmcReaderConfig:
        if self.id_style == "pmcid" and self.versions == "all":
            raise ValueError(
                "id_style: pmcid names every version of an article alike; use id_style: "
                "pmcid_version with versions: all"
            )
        if (self.since or self.previous_inventory) and not self.inventory:
            raise ValueError(
                "'since' and 'previous_inventory' need the inventory's times and ETags: set "
                "inventory: latest (or the inventory's path)"
            )
        if self.since is not None and not _is_time(self.since):
            raise ValueError(
                f"since: {self.since!r} is not an ISO date or time (e.g. 2026-11-10 or "
                "2026-11-10T01:00:00Z)"
            )
        named: dict[str, str] = {}
        for article in self.articles:
            pmcid, _ = parse_article(article)
            if self.id_style == "pmcid" and pmcid in named and named[pmcid] != article:
                raise ValueError(
                    f"articles: {named[pmcid]} and {article} are versions of one article, "
                    f"and id_style: pmcid would give both the id {pmcid}; use id_style: "
                    "pmcid_version"
                )
            named.setdefault(pmcid, article)
        return self


def _is_time(text: str) -> bool:
    try:
        parse_time(text)
    except ValueError:
        return False
    return bool(_TIME.match(text))


class PmcArticleError(DocumentError, ValueError):
    hint = (
        "the article version's files are missing or damaged in the mirror; download that "
        "prefix again (aws s3 cp --recursive s3://pmc-oa-opendata/PMC<id>.<version>/ ...)"
    )


class PmcReader(Reader[PmcReaderConfig]):
    name = "pmc.reader.v1"
    description = (
        "PMC Cloud Service layout (local mirror or fsspec URL): latest version per PMCID, "
        "licence and retraction filters, inventory selection; version and licence in the CAS."
    )

    @classmethod
    def requirements(cls, config: PmcReaderConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        structure = jats_produces(config) if config.text == "xml" else ()
        return (), (*structure, ARTICLE_VERSION)

    def __init__(self, config: PmcReaderConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.root = _resolve(config.input or "", self.context.workflow_dir)
        self.jats = JatsLoader(config)
        self._mirror: PmcMirror | None = None

    @property
    def mirror(self) -> PmcMirror:
        if self._mirror is None:
            self._mirror = PmcMirror(self.root, self.config.storage_options)
        return self._mirror

    @classmethod
    def check_config(cls, config: PmcReaderConfig, context: RunContext) -> list[str]:
        if not config.input:
            return [
                "no input given: set 'input' to the mirror's root (folder or URL) or pass --input"
            ]
        root = _resolve(config.input, context.workflow_dir)
        try:
            mirror = PmcMirror(root, config.storage_options)
            if not mirror.fs.isdir(mirror.root):
                return [f"input {root!r}: no such folder (the root of a PMC Cloud Service mirror)"]
        except (ImportError, ValueError, OSError) as exc:
            return [f"input {root!r}: cannot open it ({exc})"]
        problems = []
        if (
            config.articles_file
            and not _resolve_path(config.articles_file, context.workflow_dir).is_file()
        ):
            problems.append(f"articles_file {config.articles_file!r} does not exist")
        for key in ("inventory", "previous_inventory"):
            spec = getattr(config, key)
            if spec is None or spec == "latest" or "://" in spec:
                continue  # the mirror's own report, or a URL: looked for when read
            if not _resolve_path(spec, context.workflow_dir).exists():
                problems.append(
                    f"{key} {spec!r} does not exist; give an inventory manifest.json, its "
                    "report folder or a .csv(.gz), or 'latest' for the mirror's newest"
                )
        return problems

    # ------------------------------------------------------------------ parent

    def selected_versions(self) -> list[ArticleVersion]:
        """The article versions to read, before the metadata filters."""
        config, mirror = self.config, self.mirror
        inventory = (
            mirror.read_inventory(_resolve(config.inventory, self.context.workflow_dir))
            if config.inventory
            else None
        )
        wanted = self._named_articles()
        if wanted is None:
            candidates = inventory if inventory is not None else mirror.list_versions()
            chosen = latest_per_article(candidates) if config.versions == "latest" else candidates
        else:
            by_pmcid: dict[str, list[ArticleVersion]] = {}
            if inventory is not None:
                names = {pmcid for pmcid, _ in wanted}
                for article in inventory:
                    if article.pmcid in names:
                        by_pmcid.setdefault(article.pmcid, []).append(article)
            chosen = []
            for pmcid, version in wanted:
                known = by_pmcid.get(pmcid) if inventory is not None else mirror.versions_of(pmcid)
                if not known:
                    raise PmcLayoutError(
                        f"{pmcid}: not in {'the inventory' if inventory else self.root}"
                    )
                if version is not None:
                    match = [a for a in known if a.version == version]
                    if not match:
                        raise PmcLayoutError(
                            f"{pmcid}.{version}: no such version (there are "
                            f"{', '.join(a.name for a in known)})"
                        )
                    chosen.extend(match)
                elif config.versions == "latest":
                    chosen.append(max(known, key=lambda a: a.version))
                else:
                    chosen.extend(known)
            chosen = sorted(set(chosen))
        if config.since or config.previous_inventory:
            previous = (
                mirror.read_inventory(
                    _resolve(config.previous_inventory, self.context.workflow_dir)
                )
                if config.previous_inventory
                else None
            )
            chosen = changed_since(chosen, since=config.since, previous=previous)
        return chosen

    def _named_articles(self) -> list[tuple[str, int | None]] | None:
        names = list(self.config.articles)
        if self.config.articles_file:
            path = _resolve_path(self.config.articles_file, self.context.workflow_dir)
            for n, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
                line = line.split("#", 1)[0].strip()
                if line:
                    try:
                        parse_article(line)
                    except PmcLayoutError as exc:
                        raise PmcLayoutError(f"{path}:{n}: {exc}") from None
                    names.append(line)
        if not names:
            return None
        return list(dict.fromkeys(parse_article(name) for name in names))

    def keep(self, meta: ArticleMetadata) -> str | None:
        """Why the metadata filters leave this article version out (None: it is read)."""
        retracted = bool(meta.is_retracted)
        if self.config.retracted == "skip" and retracted:
            return "retracted"
        if self.config.retracted == "only" and not retracted:
            return "not retracted"
        if self.config.licenses:
            accepted = {normalize_license(code) for code in self.config.licenses}
            if normalize_license(meta.license_code or "") not in accepted:
                return f"licence {meta.license_code or 'none'}"
        return None

    def iter_documents(self) -> Iterator[DocumentRef]:
        mirror = self.mirror
        left_out: dict[str, int] = {}
        chosen = self.selected_versions()
        suffix = f".{self.config.text}"
        for article, meta, error in mirror.read_metadata(chosen):
            doc_id = article.name if self.config.id_style == "pmcid_version" else article.pmcid
            uri = mirror.uri(mirror.file_path(article, suffix))
            if meta is None:
                yield DocumentRef(doc_id, uri, error=error)
                continue
            reason = self.keep(meta)
            if reason is not None:
                left_out[reason] = left_out.get(reason, 0) + 1
                continue
            yield DocumentRef(doc_id, uri, size=self._size(article, suffix))
        if left_out:
            # Said where the run says what it did (on screen and in run-report.json):
            # a log line nobody configured a handler for left the count unseen.
            warnings.warn(
                ArticlesLeftOut(
                    f"pmc.reader.v1: {sum(left_out.values())} of {len(chosen)} article "
                    "versions left out by the reader's filters ("
                    + ", ".join(f"{n} {why}" for why, n in sorted(left_out.items()))
                    + "); see its retracted and licenses settings"
                ),
                stacklevel=2,
            )

    def _size(self, article: ArticleVersion, suffix: str) -> int:
        # A local stat is cheap and lets the runner start large articles early; on an
        # object store it would be one more request per article.
        if not self.mirror.is_local:
            return 0
        try:
            return int(self.mirror.fs.size(self.mirror.file_path(article, suffix)))
        except OSError:
            return 0

    # ------------------------------------------------------------------ worker

    def load(self, ref: DocumentRef, cas: cassis.Cas) -> None:
        stem = ref.uri.rsplit(".", 1)[0]
        meta_uri, meta_data = stem + ".json", None
        try:
            source = self._read(ref.uri)
        except InputUnreadableError as exc:  # its message names the file already
            raise PmcArticleError(str(exc)) from exc
        except OSError as exc:
            raise PmcArticleError(f"{ref.uri}: cannot read: {exc}") from exc
        name = stem.rsplit("/", 1)[-1]
        for candidate in (meta_uri, f"{stem.rsplit('/', 2)[0]}/metadata/{name}.json"):
            try:
                meta_data, meta_uri = self._read(candidate), candidate
                break
            except (OSError, InputUnreadableError):
                continue
        if meta_data is None:
            raise PmcArticleError(f"{ref.uri}: no metadata beside it nor under metadata/")
        meta = ArticleMetadata.from_json(meta_data, meta_uri)
        if self.config.text == "xml":
            doc = self.jats.load(cas, source, ref.doc_id, ref.uri)
            text = doc.text
            if not doc.title and meta.title:
                set_document_metadata(cas, ref.doc_id, ref.uri, title=meta.title)
        else:
            try:
                text = source.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise PmcArticleError(f"{ref.uri}: not UTF-8 text ({exc})") from exc
            set_sofa_text(cas, text)
            cas.sofa_mime = "text/plain"
            set_document_metadata(
                cas, ref.doc_id, ref.uri, title=meta.title, language=self.config.language
            )
        version_type = cas.typesystem.get_type(ARTICLE_VERSION)
        cas.add(
            version_type(
                begin=0,
                end=len(text),
                accession=meta.pmcid,
                version=meta.version,
                pmid=meta.pmid,
                doi=meta.doi,
                license=meta.license_code,
                retracted=bool(meta.is_retracted),
                manuscript=bool(meta.is_manuscript),
                lastModified=meta.last_updated or self._modified(meta_uri),
                source=meta_uri,
            )
        )

    def _modified(self, uri: str) -> str | None:
        """When the metadata file last changed, as PMC's inventory dates it (the JSON's
        S3 LastModified; a local mirror's file time, which ``aws s3 sync`` sets)."""
        try:
            if "://" not in uri:
                stamp: Any = os.stat(uri).st_mtime
            else:
                fs, path = fsspec.core.url_to_fs(uri, **self.config.storage_options)
                info = fs.info(path)
                stamp = info.get("LastModified") or info.get("mtime") or info.get("created")
        except (OSError, ValueError):
            return None
        if isinstance(stamp, int | float):
            stamp = datetime.fromtimestamp(stamp, tz=UTC)
        if isinstance(stamp, datetime):
            stamp = stamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return None if stamp is None else str(stamp)

    def _read(self, uri: str) -> bytes:
        if "://" not in uri:
            return read_document_bytes(uri)
        with fsspec.open(uri, "rb", **self.config.storage_options) as handle:
            return handle.read()


def _resolve(spec: str, base: Path) -> str:
    """A URL as given; a relative local path from the working directory, else the
    workflow's folder (as file inputs are resolved)."""
    if "://" in spec or spec == "latest":
        return spec
    return str(_resolve_path(spec, base))


def _resolve_path(spec: str, base: Path) -> Path:
    path = Path(spec).expanduser()
    if not path.is_absolute() and not path.exists() and (base / path).exists():
        return base / path
    return path
