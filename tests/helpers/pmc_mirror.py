"""A small mirror shaped like PMC's Cloud Service, from hand-written articles.

Four PMCIDs: PMC1001 in two versions (the second retitled), PMC1002 retracted,
PMC1003 under CC BY-NC (the others CC BY), PMC1004 an author manuscript under
CC0 whose metadata lives only under ``metadata/``. Two daily inventory reports:
the older one predates PMC1001.2 and has an older ETag for PMC1003.1.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from typing import Any

from fsspec.spec import AbstractFileSystem


def jats(pmcid: str, title: str, body: str, pmid: str) -> str:
    number = pmcid[3:]
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<article xmlns:xlink="http://www.w3.org/1999/xlink"><front><article-meta>
<article-id pub-id-type="pmid">{pmid}</article-id><article-id pub-id-type="pmcid">{pmcid}</article-id>
<article-id pub-id-type="pmc">{number}</article-id>
<title-group><article-title>{title}</article-title></title-group>
<abstract><p>Abstract of {pmcid}.</p></abstract></article-meta></front>
<body><sec><title>Results</title><p>{body}</p></sec></body>
</article>
"""


# (pmcid, version, title, license, retracted, manuscript, metadata only under metadata/)
ARTICLES: list[tuple[str, int, str, str, bool, bool, bool]] = [
    ("PMC1001", 1, "BRCA1 in mice", "CC BY", False, False, False),
    ("PMC1001", 2, "BRCA1 in mice, corrected", "CC BY", False, False, False),
    ("PMC1002", 1, "A retracted study of TP53", "CC BY", True, False, False),
    ("PMC1003", 1, "Shh in the limb bud", "CC BY-NC", False, False, False),
    ("PMC1004", 1, "An author manuscript on Pax6", "CC0", False, True, True),
]

NEW_REPORT = "2026-11-20T01-00Z"
OLD_REPORT = "2026-11-10T01-00Z"
# Inventory times: PMC1001.2 and the new PMC1003.1 ETag came after the old report.
TIMES = {
    "PMC1001.1": "2026-11-01T10:00:00.000Z",
    "PMC1001.2": "2026-11-15T10:00:00.000Z",
    "PMC1002.1": "2026-11-02T10:00:00.000Z",
    "PMC1003.1": "2026-11-16T10:00:00.000Z",
    "PMC1004.1": "2026-11-03T10:00:00.000Z",
}


def metadata(
    pmcid: str, version: int, title: str, license_code: str, retracted: bool, manuscript: bool
) -> dict[str, Any]:
    name = f"{pmcid}.{version}"
    url = f"s3://pmc-oa-opendata/{name}/{name}"
    return {
        "pmcid": pmcid,
        "version": version,
        "pmid": int(pmcid[3:]) + 90000,
        "doi": f"10.1234/{name.lower()}",
        "mid": None,
        "title": title,
        "citation": "J Test. 2026;1:1",
        "is_pmc_openaccess": not manuscript,
        "is_manuscript": manuscript,
        "is_historical_ocr": False,
        "is_retracted": retracted,
        "license_code": license_code,
        "xml_url": f"{url}.xml?md5=0",
        "text_url": f"{url}.txt?md5=0",
        "pdf_url": None,
        "media_urls": [],
    }


def build_mirror(fs: AbstractFileSystem, root: str) -> None:
    """Write the mirror under ``root`` of ``fs`` (a local or in-memory file system)."""
    root = root.rstrip("/")
    rows_new, rows_old = [], []
    for pmcid, version, title, license_code, retracted, manuscript, only_central in ARTICLES:
        name = f"{pmcid}.{version}"
        record = metadata(pmcid, version, title, license_code, retracted, manuscript)
        body = f"The gene was studied in {name}."
        fs.makedirs(f"{root}/{name}", exist_ok=True)
        fs.pipe_file(
            f"{root}/{name}/{name}.xml", jats(pmcid, title, body, str(record["pmid"])).encode()
        )
        fs.pipe_file(f"{root}/{name}/{name}.txt", f"{title}\n\n{body}\n".encode())
        data = json.dumps(record, indent=2).encode()
        if not only_central:
            fs.pipe_file(f"{root}/{name}/{name}.json", data)
        fs.makedirs(f"{root}/metadata", exist_ok=True)
        fs.pipe_file(f"{root}/metadata/{name}.json", data)
        key = f"metadata/{name}.json"
        etag = hashlib.md5(data).hexdigest()
        rows_new.append(f'"pmc-oa-opendata","{key}","{TIMES[name]}","{etag}"')
        if name == "PMC1001.2":
            continue  # not there yet
        old_etag = hashlib.md5(b"before " + data).hexdigest() if name == "PMC1003.1" else etag
        old_time = "2026-11-05T10:00:00.000Z" if name == "PMC1003.1" else TIMES[name]
        rows_old.append(f'"pmc-oa-opendata","{key}","{old_time}","{old_etag}"')
    inventory = f"{root}/inventory-reports/pmc-oa-opendata/metadata"
    for report, rows in ((OLD_REPORT, rows_old), (NEW_REPORT, rows_new)):
        key = f"inventory-reports/pmc-oa-opendata/metadata/data/{report}.csv.gz"
        fs.makedirs(f"{inventory}/{report}", exist_ok=True)
        fs.makedirs(f"{inventory}/data", exist_ok=True)
        fs.pipe_file(f"{root}/{key}", gzip.compress(("\n".join(rows) + "\n").encode(), mtime=0))
        manifest = {"sourceBucket": "pmc-oa-opendata", "fileFormat": "CSV", "files": [{"key": key}]}
        fs.pipe_file(f"{inventory}/{report}/manifest.json", json.dumps(manifest).encode())
    fs.makedirs(f"{inventory}/hive", exist_ok=True)
    fs.pipe_file(f"{inventory}/hive/symlink.txt", b"")
    fs.pipe_file(f"{root}/README.txt", b"A test mirror of the PMC Cloud Service layout.\n")
