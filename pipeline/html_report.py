"""``evaluation.html``: the evaluation as a page to read, self-contained.

Everything is in the one file (inline CSS, plots as inline SVG drawn by
matplotlib, a few lines of script that unfold the lists for printing), so it opens
offline, in a mail attachment or years later. Per evaluator (layer) it shows:

- the table of ``evaluation.md`` (systems as rows, ``Evaluator.summary``
  columns), the best system per column in bold (``Evaluator.column_direction``),
  and the significance tests when the workflow asked for them;
- P/R/F bars per system and a precision-recall scatter with iso-F curves
  (``Evaluator.prf_points``), the per-document distribution of the headline F;
- scores by band, e.g. by sentence length or by agreement
  (``Evaluator.band_scores``), as a plot and a table;
- further tables such as production error classes (``Evaluator.detail_tables``);
- a bounded list of errors with the text around them and the gold and system
  spans marked (``Evaluator.error_examples`` over ``evaluation-errors.jsonl``).

Every figure comes from the same summed counts as ``evaluation.json``; the cells
carry the unrounded value in ``data-value`` so a check can compare them.
"""

from __future__ import annotations

import html
import io
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from casflow.pipeline.component import ErrorExample, Evaluator
from casflow.pipeline.files import atomic_write_text
from casflow.pipeline.significance_report import (
    RUN_AGAIN,
    SignificanceError,
    check_line,
    damaged,
    one_line,
    p_text,
    units_text,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

HTML_FILE = "evaluation.html"
#: Error groups listed per evaluator and system (the errors file has them all).
MAX_ERRORS = 30
SIGNIFICANCE_LEVEL = 0.05
# Okabe & Ito's palette: tells systems apart for colour-blind readers and in grey print.
SYSTEM_COLOURS = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#F0E442",
    "#000000",
)
#: Inches: a figure as wide as the page's text.
MAX_PLOT_WIDTH = 10.0
#: Resolution of the parts of a plot drawn as an image (sharp on a high-density screen).
RASTER_DPI = 200
#: Dots of the per-document plot drawn as SVG elements; more are drawn as one image.
MAX_VECTOR_DOTS = 3000
#: Inches per character of a 7.5 pt tick label (sans-serif, a little over the mean width).
TICK_LABEL_INCHES_PER_CHAR = 0.065


def _system_colour(index: int) -> str:
    return SYSTEM_COLOURS[index % len(SYSTEM_COLOURS)]


def _system_fill(index: int) -> dict[str, Any]:
    """Marker fill of the ``index``-th system: past the palette's 8 colours, the next 8
    systems have hollow markers and the 8 after them a black ring, so that s8 is not
    drawn like s0."""
    colour = _system_colour(index)
    cycle = index // len(SYSTEM_COLOURS) % 3
    if cycle == 1:
        return {"facecolor": "none", "edgecolor": colour, "linewidth": 1.4}
    return {
        "facecolor": colour,
        "edgecolor": "black" if cycle == 2 else "white",
        "linewidth": 1.2 if cycle == 2 else 0.8,
    }


#: Line styles of the band plot's systems, by the same cycles as :func:`_system_fill`.
SYSTEM_LINES = ("-", "--", ":")

PRF_COLOURS = {"P": "#a6cee3", "R": "#1f78b4", "F": "#08306b"}
POINT_MARKERS = ("o", "s", "^", "D", "v", "P")
PLOT_STYLE: dict[Any, Any] = {  # Any keys: matplotlib types them as a Literal of its rc names
    "svg.fonttype": "none",  # text stays text: searchable, selectable, small
    "svg.hashsalt": "casflow",  # the same run gives the same file
    # View names are text, never TeX: "a$_1$" was drawn as a subscript and "x$\foo$"
    # stopped the page with a mathtext error.
    "text.parse_math": False,
    "font.family": "sans-serif",
    "font.sans-serif": ["Helvetica", "Arial", "Liberation Sans", "DejaVu Sans"],
    "font.size": 8.5,
    "axes.titlesize": 9,
    "axes.labelsize": 8.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
    "legend.fontsize": 7.5,
    "xtick.labelsize": 7.5,
    "ytick.labelsize": 7.5,
}


def _fmt(value: float, decimals: int | None) -> str:
    from casflow.pipeline.evaluation_report import _fmt as fmt

    return fmt(value, decimals)


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


@dataclass
class _Figures:
    """Numbers the figures, and makes the ids inside each SVG unique in the page."""

    count: int = 0
    blocks: list[str] = field(default_factory=list)

    def add(self, figure: Figure, caption: str, wide: bool = False) -> str:
        import matplotlib.pyplot as plt

        self.count += 1
        buffer = io.StringIO()
        figure.savefig(
            buffer,
            format="svg",
            bbox_inches="tight",
            metadata={"Date": None, "Creator": None},
            dpi=RASTER_DPI,
        )
        plt.close(figure)
        svg = buffer.getvalue()
        svg = svg[svg.index("<svg") :]
        # The RDF metadata names licence and schema URLs; the page needs none of it.
        svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
        prefix = f"fig{self.count}-"
        svg = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}\1"', svg)
        svg = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}\1)", svg)
        svg = re.sub(r'href="#([^"]+)"', rf'href="#{prefix}\1"', svg)
        svg = svg.replace("<svg ", f'<svg class="plot" role="img" aria-label="{_e(caption)}" ', 1)
        css = "figure wide" if wide else "figure"
        return (
            f'<figure class="{css}" id="figure-{self.count}">{svg}'
            f"<figcaption><b>Figure {self.count}.</b> {_e(caption)}</figcaption></figure>"
        )


def _percent_limits(values: Sequence[float]) -> tuple[float, float]:
    low = min(values, default=0.0)
    # Start the axis near the data (differences between systems are often a few
    # points) but at a round number, and say so on the axis.
    return (max(0.0, 10 * int(low / 10) - 10) if low > 20 else 0.0), 100.0


def _prf_bars(points: Mapping[str, Mapping[str, Mapping[str, float]]]) -> Figure:
    """P/R/F bars: systems along x (one panel per named point), or the points along x
    when there is one system."""
    import matplotlib.pyplot as plt
    import numpy as np

    systems = list(points)
    names = list(dict.fromkeys(name for system in systems for name in points[system]))[:4]
    if len(systems) == 1:
        panels = [("", names, lambda group, _n: points[systems[0]].get(group))]
    else:
        panels = [(name, systems, lambda group, n: points[group].get(n)) for name in names]
    # Each group keeps the room its three bars and F label need: the figure grows with the
    # systems (a fixed width ran their labels together), and panels that would make it
    # wider than the page go to further rows.
    panel_width = 0.6 + 0.6 * len(panels[0][1])
    columns = max(1, min(len(panels), int(MAX_PLOT_WIDTH // panel_width)))
    rows = -(-len(panels) // columns)
    width = min(MAX_PLOT_WIDTH, 0.6 + panel_width * columns)
    # Labels wider than their group of bars are rotated (side by side they ran
    # together). Rotated labels as long as view names often are ("m1-biobert-large-...")
    # ran into the next row's panel under a fixed spacing: each row gets the labels'
    # height on top of its axes, and the constrained layout places rows and legend by
    # their drawn extents.
    longest = max((len(g or "all") for g in panels[0][1]), default=0)
    rotate = len(panels[0][1]) > 3 or TICK_LABEL_INCHES_PER_CHAR * longest > 0.55
    label_height = TICK_LABEL_INCHES_PER_CHAR * longest * (0.6 if rotate else 0.0)
    figure, grid = plt.subplots(
        rows,
        columns,
        figsize=(max(3.2, width), (2.3 + label_height) * rows),
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    for unused in grid.flat[len(panels) :]:
        unused.set_visible(False)
    axes = [list(grid.flat[: len(panels)])]
    all_values = [
        100 * v[k]
        for s in systems
        for v in points[s].values()
        for k in ("precision", "recall", "f1")
    ]
    limits = _percent_limits(all_values)
    for axis, (title, groups, get) in zip(axes[0], panels, strict=True):
        x = np.arange(len(groups))
        for offset, (label, key) in enumerate((("P", "precision"), ("R", "recall"), ("F", "f1"))):
            values = [100 * (get(g, title) or {}).get(key, 0.0) for g in groups]
            bars = axis.bar(
                x + (offset - 1) * 0.26, values, 0.26, label=label, color=PRF_COLOURS[label]
            )
            if key == "f1":
                axis.bar_label(bars, fmt="%.1f", fontsize=6.5, padding=1.5)
        axis.set_xticks(
            x,
            [g or "all" for g in groups],
            rotation=35 if rotate else 0,
            ha="right" if rotate else "center",
        )
        axis.set_ylim(*limits)
        axis.grid(axis="x", visible=False)
        if title:
            axis.set_title(title)
    for row in grid:
        row[0].set_ylabel("%")
    grid[0][-1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return figure


def _pr_scatter(points: Mapping[str, Mapping[str, Mapping[str, float]]]) -> Figure:
    """Precision against recall per system (colour) and named point (marker), iso-F lines."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.lines import Line2D

    figure, axis = plt.subplots(figsize=(3.4, 3.0))
    names = list(dict.fromkeys(name for system in points.values() for name in system))
    xs, ys = [], []
    for index, named in enumerate(points.values()):
        fill = _system_fill(index)
        for name, value in named.items():
            marker = POINT_MARKERS[names.index(name) % len(POINT_MARKERS)]
            x, y = 100 * value["recall"], 100 * value["precision"]
            xs.append(x)
            ys.append(y)
            axis.scatter(
                x,
                y,
                s=34,
                marker=marker,
                facecolors=fill["facecolor"],
                edgecolors=fill["edgecolor"],
                linewidths=fill["linewidth"],
                zorder=3,
                clip_on=False,
            )
    low = min(xs + ys, default=0.0)
    low = max(0.0, 5 * int((low - 3) / 5)) if low > 10 else 0.0
    recall = np.linspace(max(low, 0.5), 100, 200)
    span = 100 - low
    step = 1 if span <= 8 else 2 if span <= 20 else 5 if span <= 50 else 10
    for f in range(step, 100, step):
        if f <= low:
            continue
        on_curve = recall[2 * recall > f]  # F = f needs recall above f / 2
        precision = f * on_curve / (2 * on_curve - f)
        shown = precision <= 100
        axis.plot(
            on_curve[shown], precision[shown], color="#9a9a9a", lw=0.7, ls=(0, (4, 3)), zorder=1
        )
        if shown.any():
            axis.annotate(
                f"F={f}",
                (100, f * 100 / (200 - f)),
                fontsize=6,
                color="#999999",
                xytext=(2, 0),
                textcoords="offset points",
                va="center",
            )
    axis.set_xlim(low, 100.5)
    axis.set_ylim(low, 100.5)
    axis.set_aspect("equal")
    axis.set_xlabel("recall (%)")
    axis.set_ylabel("precision (%)")
    handles = [
        Line2D(
            [],
            [],
            ls="",
            marker="o",
            markerfacecolor=_system_fill(i)["facecolor"],
            markeredgecolor=_system_fill(i)["edgecolor"],
            markeredgewidth=_system_fill(i)["linewidth"],
            label=s,
        )
        for i, s in enumerate(points)
    ]
    if len(names) > 1:
        handles += [
            Line2D(
                [],
                [],
                ls="",
                marker=POINT_MARKERS[i % len(POINT_MARKERS)],
                color="#555555",
                label=name or "all",
            )
            for i, name in enumerate(names)
        ]
    # Beside the axes: inside, it would hide the points it names.
    axis.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.12, 1.0), fontsize=7)
    return figure


def _document_spread(values: Mapping[str, Sequence[float]], metric: str) -> Figure:
    """Per-document scores per system: a box over the documents and each document a dot."""
    import matplotlib.pyplot as plt
    import numpy as np

    systems = list(values)
    figure, axis = plt.subplots(figsize=(4.6, 0.5 + 0.45 * len(systems)))
    data = [[100 * v for v in values[s]] for s in systems]
    # A corpus of sentences as documents (BC2GM: 5,000) drew one SVG element per dot and
    # system, 5 MB of the page for 7 systems: past a few thousand, the dots are one image.
    rasterized = sum(map(len, data)) > MAX_VECTOR_DOTS
    axis.boxplot(
        data,
        orientation="horizontal",
        widths=0.5,
        showfliers=False,
        medianprops={"color": "#333333"},
        boxprops={"color": "#888888"},
        whiskerprops={"color": "#888888"},
        capprops={"color": "#888888"},
    )
    for row, (scores, system) in enumerate(zip(data, systems, strict=True), start=1):
        fill = _system_fill(row - 1)
        # Spread the dots evenly across the box's height (no randomness: stable files).
        spread = np.linspace(-0.15, 0.15, len(scores)) if len(scores) > 1 else [0.0]
        axis.scatter(
            scores,
            [row + d for d in spread],
            s=14,
            facecolors=fill["facecolor"],
            edgecolors=fill["edgecolor"],
            linewidths=fill["linewidth"] / 2,
            alpha=0.8,
            zorder=3,
            label=system,
            rasterized=rasterized,
        )
    axis.set_yticks(range(1, len(systems) + 1), systems)
    axis.invert_yaxis()
    axis.set_xlabel(f"{metric} per document (%)")
    axis.grid(axis="y", visible=False)
    return figure


def _band_names(bands: Mapping[str, Mapping[str, Mapping[str, float]]]) -> list[str]:
    """Bands in order, without those no system has a sentence in."""
    names = dict.fromkeys(b for per_system in bands.values() for b in per_system)
    return [b for b in names if any(p.get(b, {}).get("sentences") for p in bands.values())]


def _band_plot(kind: str, bands: Mapping[str, Mapping[str, Mapping[str, float]]]) -> Figure:
    """F per band and system, with the number of sentences per band under the axis."""
    import matplotlib.pyplot as plt

    names = _band_names(bands)
    figure, axis = plt.subplots(figsize=(4.6, 2.6))
    counts = {
        tuple(per_system.get(b, {}).get("sentences", 0) for b in names)
        for per_system in bands.values()
    }
    for index, (system, per_band) in enumerate(bands.items()):
        x = [i for i, b in enumerate(names) if per_band.get(b, {}).get("sentences")]
        y = [100 * per_band[names[i]]["f1"] for i in x]
        axis.plot(
            x,
            y,
            marker="o",
            ms=4,
            lw=1.4,
            label=system,
            color=_system_colour(index),
            ls=SYSTEM_LINES[index // len(SYSTEM_COLOURS) % len(SYSTEM_LINES)],
        )
    labels = names
    if len(counts) == 1:  # the same sentences per band for every system: say how many
        only = next(iter(counts))
        labels = [f"{b}\nn={int(n)}" for b, n in zip(names, only, strict=True)]
    axis.set_xticks(range(len(names)), labels)
    axis.set_xlabel(kind)
    axis.set_ylabel("F (%)")
    axis.grid(axis="x", visible=False)
    if len(bands) > 1:
        axis.legend(loc="best")
    return figure


#: A score an evaluated system does not have: nothing to score (no gold and no system
#: items), so P, R and F are undefined rather than 0.
UNDEFINED = "–"
_UNDEFINED_CELL = (
    f'<td class="undefined" title="no score: nothing to score here (no gold and no system '
    f'items)">{UNDEFINED}</td>'
)


def _cell(value: float, decimals: int | None, best: bool = False) -> str:
    css = ' class="best"' if best else ""
    text = _fmt(value, decimals)
    shown = f"<strong>{text}</strong>" if best else text
    return f'<td{css} data-value="{value!r}">{shown}</td>'


def _best(evaluator: Evaluator, rows: Mapping[str, Mapping[str, float]], column: str) -> set[str]:
    direction = evaluator.column_direction(column)
    present = {name: row[column] for name, row in rows.items() if column in row}
    if direction == 0 or len(present) < 2:
        return set()
    target = max(present.values()) if direction > 0 else min(present.values())
    return {name for name, value in present.items() if value == target}


def evaluated_systems(systems: Mapping[str, Any]) -> dict[str, Any]:
    """The systems some document was evaluated for: the scores of the others are the
    scores of no counts (0), which no table should show or rank."""
    return {name: data for name, data in systems.items() if data["documents"]}


def _score_table(label: str, evaluator: Evaluator, systems: Mapping[str, Any]) -> str:
    evaluated = evaluated_systems(systems)
    if not evaluated:
        return "<p>(no document was evaluated)</p>"
    rows = {
        name: evaluator.summary(data["scores"]) if name in evaluated else {}
        for name, data in systems.items()
    }
    columns = list(dict.fromkeys(col for row in rows.values() for col in row))
    if not columns:
        return "<p>(no scores)</p>"
    best = {col: _best(evaluator, rows, col) for col in columns}
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = []
    for name, row in rows.items():
        missing = _UNDEFINED_CELL if name in evaluated else "<td></td>"
        cells = "".join(
            _cell(row[c], evaluator.summary_decimals, name in best[c]) if c in row else missing
            for c in columns
        )
        body.append(
            f'<tr data-system="{_e(name)}"><th scope="row">{_e(name)}</th>'
            f"<td>{systems[name]['documents']}</td>{cells}</tr>"
        )
    return (
        f'<table class="scores" data-evaluator="{_e(label)}"><thead><tr><th>system</th>'
        f"<th>documents</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def _significance_table(tests: Sequence[Mapping[str, Any]]) -> str:
    if not tests:
        return ""
    first = next((t for t in tests if "error" not in t), tests[0])
    rows = []
    for test in tests:
        pair = f"<td>{_e(test['system_a'])}</td><td>{_e(test['system_b'])}</td>"
        if "error" in test:
            rows.append(f'<tr>{pair}<td colspan="5" class="note">{_e(test["error"])}</td></tr>')
            continue
        p = test["p_two_sided"]
        differ = p < SIGNIFICANCE_LEVEL
        verdict = "differ" if differ else "no significant difference"
        rows.append(
            f'<tr class="{"differ" if differ else "same"}">{pair}'
            f'<td data-value="{test["metric_a"]!r}">{100 * test["metric_a"]:.2f}</td>'
            f'<td data-value="{test["metric_b"]!r}">{100 * test["metric_b"]:.2f}</td>'
            f'<td data-value="{test["observed_difference"]!r}">'
            f"{100 * test['observed_difference']:+.2f}</td>"
            f'<td data-value="{p!r}">{p_text(p)}</td><td>{verdict}</td></tr>'
        )
    caption = (
        f"Paired approximate randomization on {_e(first['metric'])}: "
        f"{_e(first.get('iterations', '?'))} shuffles of {_e(units_text(first))}, "
        f"seed {_e(first.get('seed', '?'))}; two systems differ when p &lt; {SIGNIFICANCE_LEVEL}."
    )
    return (
        f'<table class="significance"><caption>{caption}</caption><thead><tr><th>A</th>'
        "<th>B</th><th>A (%)</th><th>B (%)</th><th>A − B (points)</th><th>p</th><th></th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _band_table(kind: str, bands: Mapping[str, Mapping[str, Mapping[str, float]]]) -> str:
    names = _band_names(bands)
    head = "".join(f'<th colspan="2">{_e(s)}</th>' for s in bands)
    sub = "<th>sentences</th><th>F (%)</th>" * len(bands)
    body = []
    for band in names:
        cells = []
        for per_band in bands.values():
            values = per_band.get(band)
            if not values or not values.get("sentences"):
                cells.append("<td></td><td></td>")
                continue
            f1 = values["f1"]
            cells.append(
                f'<td>{int(values["sentences"])}</td><td data-value="{f1!r}">{100 * f1:.2f}</td>'
            )
        body.append(f'<tr><th scope="row">{_e(band)}</th>{"".join(cells)}</tr>')
    return (
        f'<table class="bands"><thead><tr><th rowspan="2">{_e(kind)}</th>{head}</tr>'
        f"<tr>{sub}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def _detail_table(
    title: str, tables: Mapping[str, Mapping[str, Mapping[str, float]]], decimals: int | None
) -> str:
    systems = list(tables)
    rows = list(dict.fromkeys(r for table in tables.values() for r in table))
    columns = list(
        dict.fromkeys(c for table in tables.values() for row in table.values() for c in row)
    )
    head = "".join(f'<th colspan="{len(columns)}">{_e(s)}</th>' for s in systems)
    sub = "".join(f"<th>{_e(c)}</th>" for c in columns) * len(systems)
    body = []
    for row in rows:
        cells = "".join(
            _cell(tables[s][row][c], decimals) if c in tables[s].get(row, {}) else "<td></td>"
            for s in systems
            for c in columns
        )
        body.append(f'<tr><th scope="row">{_e(row)}</th>{cells}</tr>')
    return (
        f'<table class="detail"><caption>{_e(title)}</caption><thead><tr><th rowspan="2"></th>'
        f"{head}</tr><tr>{sub}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def _marked(example: ErrorExample) -> str:
    """The example's text with gold spans, system spans and both marked."""
    flags = [0] * len(example.text)
    for bit, spans in ((1, example.gold), (2, example.system)):
        for begin, end in spans:
            for i in range(max(0, begin), min(end, len(flags))):
                flags[i] |= bit
    out, start = [], 0
    css = {1: "gold", 2: "sys", 3: "both"}
    for i in range(1, len(flags) + 1):
        if i == len(flags) or flags[i] != flags[start]:
            piece = _e(example.text[start:i])
            out.append(
                f'<mark class="{css[flags[start]]}">{piece}</mark>' if flags[start] else piece
            )
            start = i
    return "".join(out)


def _error_groups(path: Path) -> Iterator[tuple[str, str, str, list[dict[str, Any]]]]:
    """``(evaluator, system, document, errors)`` from the errors file, which holds each
    document's errors together."""
    if not path.is_file():
        return
    key: tuple[str, str, str] | None = None
    errors: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise damaged(path, exc, number) from exc
            check_line(path, number, record, ("evaluator", "system", "document"))
            here = (record.pop("evaluator"), record.pop("system"), record.pop("document"))
            if here != key:
                if key is not None:
                    yield (*key, errors)
                key, errors = here, []
            errors.append(record)
    if key is not None:
        yield (*key, errors)


def _collect_examples(
    path: Path, evaluators: Mapping[str, Evaluator]
) -> dict[str, dict[str, tuple[list[tuple[str, ErrorExample]], int]]]:
    """Per evaluator and system: at most MAX_ERRORS examples, taken in turn from each
    document (the first document alone would say little about the others), and how many
    there are in all."""
    per_document: dict[tuple[str, str], dict[str, list[ErrorExample]]] = {}
    totals: dict[tuple[str, str], int] = {}
    for label, system, document, errors in _error_groups(path):
        evaluator = evaluators.get(label)
        if evaluator is None:
            continue
        try:
            examples = evaluator.error_examples(errors)
        except (KeyError, TypeError, ValueError) as exc:
            raise SignificanceError(
                f"{path}: the errors of document {document!r} ({label}, {system}) are not "
                f"as {evaluator.name} writes them ({type(exc).__name__}: {one_line(str(exc))}); the file is "
                f"damaged: {RUN_AGAIN}"
            ) from exc
        if not examples:
            continue
        key = (label, system)
        totals[key] = totals.get(key, 0) + len(examples)
        kept = per_document.setdefault(key, {}).setdefault(document, [])
        kept.extend(examples[: MAX_ERRORS - len(kept)])
    found: dict[str, dict[str, tuple[list[tuple[str, ErrorExample]], int]]] = {}
    for (label, system), documents in per_document.items():
        taken = dict.fromkeys(documents, 0)
        while sum(taken.values()) < MAX_ERRORS and any(
            taken[d] < len(documents[d]) for d in documents
        ):
            for document in documents:
                if taken[document] < len(documents[document]) and sum(taken.values()) < MAX_ERRORS:
                    taken[document] += 1
        shown = [(d, e) for d in documents for e in documents[d][: taken[d]]]
        found.setdefault(label, {})[system] = (shown, totals[(label, system)])
    return found


def _error_list(
    system: str, shown: Sequence[tuple[str, ErrorExample]], total: int, first: bool = False
) -> str:
    items = "".join(
        f'<li><span class="doc">{_e(document)}</span> <span class="kind">{_e(e.note)}</span>'
        f' <span class="snippet">…{_marked(e)}…</span></li>'
        for document, e in shown
    )
    more = (
        f" ({len(shown)} of {total}, taken in turn from each document; all are in "
        "evaluation-errors.jsonl)"
        if total > len(shown)
        else ""
    )
    return (
        f'<details class="errors" data-system="{_e(system)}"{" open" if first else ""}>'
        f"<summary>{_e(system)}: "
        f"{total} error(s){more}</summary><ol>{items}</ol></details>"
    )


def _section(
    label: str,
    entry: Mapping[str, Any],
    evaluator: Evaluator,
    documents: Mapping[str, Mapping[str, Any]],
    examples: Mapping[str, tuple[list[tuple[str, ErrorExample]], int]],
    figures: _Figures,
    anchor: str,
) -> str:
    import matplotlib.pyplot as plt

    systems = entry["systems"]
    evaluated = evaluated_systems(systems)
    parts = [
        f'<section id="{_e(anchor)}"><h2>{_e(label)} '
        f'<span class="component">{_e(entry["component"])}</span></h2>',
        f'<p class="views">gold view <code>{_e(entry["gold_view"])}</code>; system views '
        + ", ".join(f"<code>{_e(s)}</code>" for s in systems)
        + ("; best per column in <strong>bold</strong>.</p>" if len(systems) > 1 else ".</p>"),
        _wrap(_score_table(label, evaluator, systems)),
        _significance_table(entry.get("significance") or []),
    ]
    blocks: list[str] = []
    with plt.rc_context(PLOT_STYLE):
        points = {s: evaluator.prf_points(data["scores"]) for s, data in evaluated.items()}
        points = {s: p for s, p in points.items() if p}
        if points:
            blocks.append(figures.add(_prf_bars(points), f"{label}: precision, recall and F."))
            blocks.append(
                figures.add(
                    _pr_scatter(points),
                    f"{label}: precision against recall; dashed lines join equal F.",
                )
            )
            headline = next(iter(next(iter(points.values()))))
            spread = {
                s: [
                    v[headline]["f1"]
                    for v in (evaluator.prf_points(d) for d in documents.get(s, {}).values())
                    if headline in v
                ]
                for s in points
            }
            if any(len(v) > 1 for v in spread.values()):
                metric = f"{headline} F" if headline else "F"
                blocks.append(
                    figures.add(
                        _document_spread(spread, metric),
                        f"{label}: {metric} per document (dots), with median and quartiles.",
                    )
                )
        band_kinds = list(
            dict.fromkeys(k for d in evaluated.values() for k in evaluator.band_scores(d["scores"]))
        )
        band_tables = []
        for kind in band_kinds:
            bands = {
                s: evaluator.band_scores(d["scores"]).get(kind, {}) for s, d in evaluated.items()
            }
            blocks.append(figures.add(_band_plot(kind, bands), f"{label}: F by {kind}."))
            band_tables.append(_wrap(_band_table(kind, bands)))
    parts.append(f'<div class="figures">{"".join(blocks)}</div>')
    parts += band_tables
    detail_titles = list(
        dict.fromkeys(t for d in evaluated.values() for t in evaluator.detail_tables(d["scores"]))
    )
    for title in detail_titles:
        tables = {
            s: evaluator.detail_tables(d["scores"]).get(title, {}) for s, d in evaluated.items()
        }
        parts.append(_wrap(_detail_table(title, tables, evaluator.summary_decimals)))
    parts.append(_per_document_table(label, evaluator, documents, list(points)))
    if examples:
        parts.append(
            '<h3>Errors</h3><p class="legend"><mark class="gold">gold only</mark> '
            '<mark class="sys">system only</mark> <mark class="both">both</mark></p>'
        )
        listed = [s for s in systems if s in examples]
        parts += [_error_list(s, *examples[s], first=s == listed[0]) for s in listed]
    parts.append("</section>")
    return "\n".join(p for p in parts if p)


def _per_document_table(
    label: str, evaluator: Evaluator, documents: Mapping[str, Mapping[str, Any]], systems: list[str]
) -> str:
    """Headline P/R/F per document and system, folded: the data behind the spread plot."""
    if not systems:
        return ""
    doc_ids = sorted({d for s in systems for d in documents.get(s, {})})
    head = "".join(f"<th>{_e(s)}</th>" for s in systems)
    body = []
    for doc in doc_ids:
        cells = []
        for s in systems:
            scores = documents.get(s, {}).get(doc)
            point = next(iter(evaluator.prf_points(scores).values()), None) if scores else None
            cells.append(
                f'<td data-value="{point["f1"]!r}">{100 * point["f1"]:.2f}</td>'
                if point
                else "<td></td>"
            )
        body.append(f'<tr><th scope="row">{_e(doc)}</th>{"".join(cells)}</tr>')
    return (
        f'<details class="documents"><summary>F per document ({len(doc_ids)})</summary>'
        f'<table class="per-document" data-evaluator="{_e(label)}"><thead><tr><th>document</th>'
        f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table></details>"
    )


def _wrap(table: str) -> str:
    """A wide table scrolls inside its box instead of widening the page."""
    return f'<div class="wrap">{table}</div>'


def _anchors(labels: Iterable[str]) -> dict[str, str]:
    """Each evaluator's section id. Labels that spell the same id ("genes b" and
    "genes-b") get a number, so that every link goes to its own section."""
    anchors: dict[str, str] = {}
    for label in labels:
        anchor = base = "eval-" + re.sub(r"[^A-Za-z0-9_-]+", "-", label)
        number = 1
        while anchor in anchors.values():
            number += 1
            anchor = f"{base}-{number}"
        anchors[label] = anchor
    return anchors


def _overview(summary: Mapping[str, Any], evaluators: Mapping[str, Evaluator]) -> str:
    """The headline F of every layer and system (the paper's summary table): one row per
    system, as in the layers' own tables, one column per layer, the best per layer marked
    (a study compares many more systems than layers, which would not fit as columns)."""
    systems = list(dict.fromkeys(s for entry in summary.values() for s in entry["systems"]))
    anchors = _anchors(summary)  # as the sections have them (same labels, same order)
    columns = []
    for label, entry in summary.items():
        evaluator = evaluators[label]
        points = {
            s: evaluator.prf_points(d["scores"])
            for s, d in evaluated_systems(entry["systems"]).items()
        }
        names = [next(iter(p)) for p in points.values() if p]
        if not names:
            continue
        headline = names[0]
        values = {s: p[headline]["f1"] for s, p in points.items() if headline in p}
        top = max(values.values()) if len(values) > 1 else None
        metric = f"{headline} F" if headline else "F"
        columns.append((label, metric, values, top, set(points)))
    if not columns:
        return ""

    def cell(
        values: Mapping[str, float], top: float | None, evaluated: set[str], system: str
    ) -> str:
        if system not in values:  # evaluated but nothing to score: as in the layer's table
            return _UNDEFINED_CELL if system in evaluated else "<td></td>"
        value, best = values[system], values[system] == top
        return (
            f'<td data-value="{value!r}"'
            + (' class="best"><strong>' if best else ">")
            + f"{100 * value:.2f}"
            + ("</strong>" if best else "")
            + "</td>"
        )

    head = "".join(
        f'<th data-evaluator="{_e(label)}"><a href="#{_e(anchors[label])}">{_e(label)}</a>'
        f'<br><span class="metric">{_e(metric)}</span></th>'
        for label, metric, _, _, _ in columns
    )
    rows = "".join(
        f'<tr data-system="{_e(s)}"><th scope="row">{_e(s)}</th>'
        + "".join(cell(values, top, evaluated, s) for _, _, values, top, evaluated in columns)
        + "</tr>"
        for s in systems
    )
    return (
        '<div class="wide"><table class="overview">'
        "<caption>Headline F (%) per system and layer; the best per layer in bold.</caption>"
        f"<thead><tr><th>system</th>{head}</tr></thead>"
        f"<tbody>{rows}</tbody></table></div>"
    )


CSS = """
:root { --ink: #1a1a1a; --muted: #666; --rule: #222; --gold: #1b9e77; --sys: #d95f02; }
body { font-family: "Charter", "Bitstream Charter", "Georgia", "DejaVu Serif", serif;
  color: var(--ink); max-width: 1080px; margin: 2em auto; padding: 0 1.5em; line-height: 1.45;
  font-size: 15px; background: #fff; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 2.2em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; }
h2 .component { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.6em;
  color: var(--muted); font-weight: normal; margin-left: 0.6em; }
h3 { font-size: 1.05em; margin-top: 1.4em; }
p.meta, p.views, .note, caption { color: var(--muted); font-size: 0.9em; }
nav ol { font-size: 0.92em; padding-left: 0; list-style: none; }
nav li { display: inline; margin-right: 1.2em; }
table { border-collapse: collapse; margin: 0.8em 0 1.2em; font-size: 0.86em;
  font-variant-numeric: tabular-nums; border-top: 1.6px solid var(--rule);
  border-bottom: 1.6px solid var(--rule); }
caption { caption-side: top; text-align: left; padding-bottom: 0.35em; }
thead tr:last-child th { border-bottom: 1px solid var(--rule); }
th, td { padding: 0.22em 0.7em; text-align: right; white-space: nowrap; }
th:first-child, tbody th { text-align: left; font-weight: normal; }
div.wide { overflow-x: auto; }
table.overview th .metric { color: var(--muted); font-weight: normal; font-size: 0.9em; }
thead th { font-weight: 600; }
td.best { background: #f3f6fb; }
td.undefined { color: var(--muted); }
tr.differ td:last-child { color: #08306b; font-weight: 600; }
tr.same td:last-child { color: var(--muted); }
.wrap { overflow-x: auto; max-width: 100%; }
.figures { display: flex; flex-wrap: wrap; gap: 1.2em 2em; align-items: flex-end; }
figure { margin: 0.4em 0; max-width: 100%; }
figure svg.plot { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 0.82em; color: #333; max-width: 34em; margin-top: 0.3em; }
details { margin: 0.5em 0; }
summary { cursor: pointer; color: #333; font-size: 0.92em; }
details.errors ol { font-size: 0.86em; padding-left: 2.2em; }
details.errors li { margin: 0.25em 0; }
.doc { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.85em;
  color: var(--muted); }
.kind { display: inline-block; min-width: 5.5em; font-size: 0.82em; color: #444;
  font-variant: small-caps; }
.snippet { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.92em;
  white-space: pre-wrap; }
mark { padding: 0 1px; border-radius: 2px; }
mark.gold { background: #d5efe6; box-shadow: inset 0 -2px 0 var(--gold); }
mark.sys { background: #fde3cf; box-shadow: inset 0 -2px 0 var(--sys); }
mark.both { background: #e6e1ef; box-shadow: inset 0 -2px 0 var(--gold), inset 0 2px 0 var(--sys); }
p.legend mark { font-size: 0.85em; }
.failed { color: #a50f15; }
@media print { body { max-width: none; } figure, tr { break-inside: avoid; } }
"""

#: Printing (or saving as PDF) unfolds the closed lists: the content of a closed
#: ``<details>`` is not printed, whatever its CSS, so the PDF lacked every error list but
#: the first and the per-document tables. A table of more than PRINTED_DOCUMENT_ROWS
#: documents stays folded (a corpus of sentences would print as hundreds of pages).
PRINTED_DOCUMENT_ROWS = 300
PRINT_SCRIPT = f"""
addEventListener("beforeprint", () => {{
  for (const d of document.querySelectorAll("details:not([open])")) {{
    if (d.querySelectorAll("tbody tr").length > {PRINTED_DOCUMENT_ROWS}) continue;
    d.dataset.printOpened = ""; d.open = true;
  }}
}});
addEventListener("afterprint", () => {{
  for (const d of document.querySelectorAll("details[data-print-opened]")) {{
    d.open = false; delete d.dataset.printOpened;
  }}
}});
"""


def write_html_report(
    output_dir: Path,
    title: str,
    summary: Mapping[str, Any],
    per_document: Mapping[str, Mapping[str, Mapping[str, Any]]],
    evaluators: Mapping[str, Evaluator],
    errors_path: Path,
    failed: Sequence[str] = (),
    left_out: Mapping[str, str] | None = None,
    part: str | None = None,
) -> Path:
    """Write ``evaluation.html`` into ``output_dir`` from a run's evaluation results;
    ``failed``: the documents that failed (as listed); ``left_out``: the optional views
    the run left out, each with why; ``part``: why the run looked at only part of its
    input (``evaluation_report.part_of_the_input``)."""
    import matplotlib

    from casflow.pipeline.evaluation_report import PART_OF_THE_INPUT

    matplotlib.use("Agg", force=False)  # no display: never open a window
    figures = _Figures()
    anchors = _anchors(summary)
    examples = _collect_examples(errors_path, evaluators)
    sections = [
        _section(
            label,
            entry,
            evaluators[label],
            per_document.get(label, {}),
            examples.get(label, {}),
            figures,
            anchors[label],
        )
        for label, entry in summary.items()
    ]
    toc = "".join(f'<li><a href="#{_e(anchors[label])}">{_e(label)}</a></li>' for label in summary)
    notes = (
        f'<p class="failed"><strong>{_e(PART_OF_THE_INPUT)}</strong> {_e(part)}</p>' if part else ""
    )
    notes += (
        f'<p class="failed">{len(failed)} document(s) failed and are not in these scores: '
        + _e(", ".join(failed[:20]) + (" ..." if len(failed) > 20 else ""))
        + "</p>"
        if failed
        else ""
    )
    if left_out:
        notes += (
            '<p class="failed">Optional views left out of this run (their steps and '
            "evaluator rows):</p><ul>"
            + "".join(f"<li>{_e(view)}: {_e(why)}</li>" for view, why in left_out.items())
            + "</ul>"
        )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Evaluation: {_e(title)}</title>
<style>{CSS}</style>
<script>{PRINT_SCRIPT}</script></head>
<body>
<h1>Evaluation: {_e(title)}</h1>
<p class="meta">Scores are computed once from counts summed over all documents (the figures of
evaluation.json, in percent). Files beside this one: evaluation.json, evaluation.md,
evaluation-documents.json, evaluation-errors.jsonl, evaluation-counts.jsonl.</p>
{notes}
{_overview(summary, evaluators)}
<nav><ol>{toc}</ol></nav>
{"".join(sections)}
</body></html>
"""
    path = output_dir / HTML_FILE
    atomic_write_text(path, page)
    return path


def rebuild_html_report(output_dir: Path) -> Path:
    """Write ``evaluation.html`` again from a finished run's evaluation files (``casflow
    report``): for runs made before the page existed, or after casflow improved it.

    Evaluators are rebuilt from the configs in ``evaluation.json``; scores that need
    counts an older casflow did not write (e.g. by sentence length) are left out. The
    notes (failed documents, part of the input, views left out) come from
    ``run-report.json`` as the run wrote them on its page. A folder whose last run wrote
    no evaluation (interrupted), or a damaged file, is a SignificanceError saying what
    to do.
    """
    from casflow.pipeline.evaluation_report import DOCUMENTS_FILE, ERRORS_FILE, part_of_the_input
    from casflow.pipeline.run_report import RUN_REPORT_NAME
    from casflow.pipeline.runner import LISTING_STAGE
    from casflow.pipeline.significance_report import (
        check_last_run,
        evaluator_from_summary,
        read_json,
        read_summary,
    )

    if not output_dir.is_dir():
        raise SignificanceError(
            f"{output_dir}: no such folder; give the output folder of a run with evaluators"
        )
    check_last_run(output_dir)  # the evaluation files must be the last run's
    summary = read_summary(output_dir)
    documents_path = output_dir / DOCUMENTS_FILE
    per_document = read_json(documents_path) if documents_path.is_file() else {}
    if not isinstance(per_document, dict):
        raise SignificanceError(
            f"{documents_path}: a JSON {type(per_document).__name__}, not the object of "
            f"evaluators casflow writes; the file is damaged: {RUN_AGAIN}"
        )
    evaluators = {
        label: evaluator_from_summary(output_dir, label, entry) for label, entry in summary.items()
    }
    run_report = output_dir / RUN_REPORT_NAME
    report = read_json(run_report) if run_report.is_file() else {}
    if not isinstance(report, dict):
        raise SignificanceError(
            f"{run_report}: a JSON {type(report).__name__}, not the object casflow writes; "
            f"the file is damaged: {RUN_AGAIN}"
        )
    # As the run left them out of its page: a repeated id or a broken listing is not a
    # document that was processed (the listing's failure is said by part_of_the_input).
    failed = sorted(
        str(f.get("document"))
        for f in report.get("failures") or []
        if isinstance(f, dict) and f.get("stage") != LISTING_STAGE
    )
    return write_html_report(
        output_dir,
        _rebuilt_title(output_dir, report),
        summary,
        per_document,
        evaluators,
        output_dir / ERRORS_FILE,
        failed,
        left_out=report.get("left_out_views"),  # runs before casflow wrote it have none
        part=part_of_the_input(report),
    )


def _rebuilt_title(output_dir: Path, run_report: Mapping[str, Any]) -> str:
    """The title the run gave its page: the workflow's ``name``, else its file's name
    (``run-report.json``'s ``workflow``); the output folder's name for runs without
    either file."""
    import yaml

    from casflow.pipeline.run_report import RUN_REPORT_NAME
    from casflow.pipeline.runner import RESOLVED_WORKFLOW_NAME

    resolved = output_dir / RESOLVED_WORKFLOW_NAME
    if resolved.is_file():
        # Only the title comes from it, so deleting it is a way out.
        damaged = (
            "the file is damaged: delete it (the page then takes its title from "
            f"{RUN_REPORT_NAME}) or run the workflow again"
        )
        try:
            spec = yaml.safe_load(resolved.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{resolved}:{mark.line + 1}" if mark is not None else str(resolved)
            why = getattr(exc, "problem", None) or one_line(str(exc))
            raise SignificanceError(f"{where}: not YAML ({why}); {damaged}") from exc
        if not isinstance(spec, dict):
            kind = "empty" if spec is None else f"a YAML {type(spec).__name__}"
            raise SignificanceError(f"{resolved}: {kind}, not a workflow; {damaged}")
        if spec.get("name"):
            return str(spec["name"])
    workflow = run_report.get("workflow")
    return Path(workflow).name if isinstance(workflow, str) and workflow else output_dir.name
