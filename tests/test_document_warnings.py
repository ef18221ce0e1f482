"""Warnings collected per stage and thread (pipeline/document_warnings.py)."""

from __future__ import annotations

import threading
import warnings

from casflow.pipeline.component import DocumentWarning
from casflow.pipeline.document_warnings import collected_warnings


def test_each_thread_collects_its_own_warnings() -> None:
    ready = threading.Barrier(2)
    said: dict[str, list[dict[str, str]]] = {"a": [], "b": []}

    def work(name: str) -> None:
        with collected_warnings(f"stage {name}", said[name]):
            ready.wait()  # both collect at once
            for _ in range(3):
                warnings.warn(DocumentWarning(f"about {name}"), stacklevel=1)
            ready.wait()

    threads = [threading.Thread(target=work, args=(n,)) for n in said]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for name, items in said.items():
        assert (
            items
            == [
                {
                    "stage": f"stage {name}",
                    "category": "DocumentWarning",
                    "message": f"about {name}",
                }
            ]
            * 3
        )


def test_an_inner_block_collects_apart_and_the_outer_one_goes_on() -> None:
    outer: list[dict[str, str]] = []
    inner: list[dict[str, str]] = []
    with collected_warnings("outer", outer):
        with collected_warnings("inner", inner):
            warnings.warn("first", UserWarning, stacklevel=1)
        warnings.warn("second", UserWarning, stacklevel=1)
    assert [(w["stage"], w["message"]) for w in inner] == [("inner", "first")]
    assert [(w["stage"], w["message"]) for w in outer] == [("outer", "second")]


def test_warnings_outside_a_collection_go_to_the_hook_that_was_there() -> None:
    seen: list[str] = []
    collected: list[dict[str, str]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, *args, **kwargs: seen.append(str(message))
        with collected_warnings("a stage", collected):
            warnings.warn("about the document", UserWarning, stacklevel=1)
        warnings.warn("not about a document", UserWarning, stacklevel=1)
    assert [w["message"] for w in collected] == ["about the document"]
    assert seen == ["not about a document"]


def test_reading_xmi_on_one_thread_takes_no_warning_of_another() -> None:
    # load_xmi once caught cassis's offset warning with catch_warnings, which swaps the
    # hook of the whole process: another thread's warnings were said again as its own.
    import time

    import cassis

    from casflow.cas.xmi_offsets import load_xmi
    from casflow.typesystem import load_typesystem

    typesystem = load_typesystem()
    cas = cassis.Cas(typesystem=typesystem)
    cas.sofa_string = "some text " * 2000
    xmi = cas.to_xmi().encode()
    said: dict[str, list[dict[str, str]]] = {"reader": [], "other": []}
    warned = 0
    stop = time.monotonic() + 1.0

    def read() -> None:
        with collected_warnings("reader", said["reader"]):
            while time.monotonic() < stop:
                load_xmi(xmi, typesystem)

    def warn() -> None:
        nonlocal warned
        with collected_warnings("other", said["other"]):
            while time.monotonic() < stop:
                warnings.warn(DocumentWarning("about the other document"), stacklevel=1)
                warned += 1
                time.sleep(0.0005)

    threads = [threading.Thread(target=read), threading.Thread(target=warn)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert said["reader"] == [] and len(said["other"]) == warned > 0


def test_a_document_keeps_each_distinct_warning_once_with_its_count_and_so_many() -> None:
    from casflow.pipeline.document_warnings import MAX_PER_DOCUMENT, distinct_warnings

    def said(message: str) -> dict[str, str]:
        return {"stage": "reader r", "category": "DocumentWarning", "message": message}

    kept = distinct_warnings([said("a"), said("b"), said("a")])
    assert [(w["message"], w["count"]) for w in kept] == [("a", 2), ("b", 1)]
    many = distinct_warnings([said(str(i)) for i in range(MAX_PER_DOCUMENT + 7)] + [said("0")])
    assert len(many) == MAX_PER_DOCUMENT + 1
    assert many[0]["count"] == 2
    assert many[-1]["category"] == "(more)" and many[-1]["count"] == 7


def test_a_document_named_by_a_batch_warning_and_its_own_counts_once() -> None:
    from casflow.pipeline.chain import DocumentResult
    from casflow.pipeline.run_report import RunTally

    batch = {"stage": "s", "category": "C", "message": "m", "documents": ["d1", "d2"]}
    own = {"stage": "s", "category": "C", "message": "n"}
    tally = RunTally.of(
        [
            DocumentResult("d1", "u1", "ok", warnings=[batch]),
            DocumentResult("d2", "u2", "ok", warnings=[own]),
        ]
    )
    assert tally.documents_with_warnings == 2
    assert sum(w["count"] for w in tally.warnings.values()) == 2
