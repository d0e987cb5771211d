"""`codeloop report`: one self-contained HTML page that shows what a session did.

Users judge a run by its curves, by the tasks it gained and lost, and by why each
round was accepted or rejected. The page is written from the session's own files
(nothing is recomputed or re-run), opens offline (plots are inline SVG drawn with
matplotlib, styles inline, no script, no network), and escapes every text that came
from a model, a task or a file, so a hostile answer cannot inject markup.

Sections: validation pass@1 per language per round (accepted rounds marked ●,
rejected ✕), audit pass@1 per round, training loss per round, rows exported per
language, each round's decision and gate numbers, and per round the validation
tasks gained and lost with the baseline's and the candidate's answers side by side.
"""

from __future__ import annotations

import html
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeloop import __version__, store
from codeloop.loop.display import guard_measure

MAX_TASKS_SHOWN = 12
"""Gained or lost tasks shown per round (the rest are counted)."""


@dataclass
class RoundView:
    """What the report shows of one round (absent parts stay empty)."""

    number: int
    decision: str = ""
    accepted: bool | None = None
    gate: dict[str, Any] = field(default_factory=dict)
    audit: dict[str, dict[str, Any]] = field(default_factory=dict)
    audit_evidence: dict[str, Any] = field(default_factory=dict)
    """What the audit's decision rested on (finish.json): its measure, bound and bar."""
    loss: list[float] = field(default_factory=list)
    exported: dict[str, int] = field(default_factory=dict)
    gained: list[tuple[dict, dict]] = field(default_factory=list)
    lost: list[tuple[dict, dict]] = field(default_factory=list)


def _read(path: Path) -> Any:
    return store.read(path) if path.exists() else None


def gather(root: Path) -> list[RoundView]:
    """Every round's view, from its files."""
    session = store.SessionPaths(root)
    views = []
    for number in session.rounds():
        folder = session.round(number)
        view = RoundView(number)
        finish = _read(folder / "finish.json")
        if finish:
            view.decision, view.accepted = finish.get("decision", ""), finish.get("accepted")
            audit = finish.get("comparisons", {}).get("audit") or {}
            view.audit_evidence = audit.get("confirmation") or {}
        view.gate = _read(folder / "gate.json") or {}
        for side in ("parent", "candidate"):
            summary = _read(folder / f"audit-{side}" / "summary.json")
            if summary:
                view.audit[side] = summary
        training = _read(folder / "adapter" / "training.json")
        if training:
            view.loss = [float(point["loss"]) for point in training.get("loss", [])]
        export = _read(folder / "export.json") or {}
        view.exported = {k: int(v) for k, v in (export.get("languages") or {}).items()}
        before = _read(folder / "baseline-rows.json")
        after = _read(folder / "candidate-rows.json")
        if before and after:
            paired = {row["id"]: row for row in before["rows"]}
            for row in after["rows"]:
                old = paired.get(row["id"])
                if old is None or bool(old["passed"]) == bool(row["passed"]):
                    continue
                (view.gained if row["passed"] else view.lost).append((old, row))
        views.append(view)
    return views


def _svg(figure) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _finish(figure, axes, title, xlabel, ylabel, rounds, outside) -> str:
    """Label a plot, render it as SVG and free it; `rounds` set the x ticks."""
    import matplotlib.pyplot as plt

    axes.set_title(title)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    if rounds is not None:
        axes.set_xticks([view.number for view in rounds])
    if outside:
        axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        axes.legend(fontsize=8)
    svg = _svg(figure)
    plt.close(figure)
    return svg


def _plots(views: list[RoundView]) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plots: dict[str, str] = {}
    gated = [v for v in views if v.gate.get("languages")]
    if gated:
        figure, axes = plt.subplots(figsize=(7.5, 3.6))
        languages = sorted({lang for v in gated for lang in v.gate["languages"]})
        for language in languages:
            xs, ys = [], []
            for view in gated:
                cell = view.gate["languages"].get(language)
                if cell and cell["total"]:
                    xs.append(view.number)
                    ys.append(100 * cell["after"] / cell["total"])
            axes.plot(xs, ys, marker="o", label=language, linewidth=1.2, markersize=3)
        for view in gated:
            if view.accepted is None:
                continue  # unfinished: neither accepted nor rejected yet
            total = view.gate.get("total") or 0
            pooled = 100 * view.gate.get("after", 0) / total if total else 0
            marker = "o" if view.accepted else "x"
            colour = "green" if view.accepted else "red"
            axes.scatter([view.number], [pooled], marker=marker, s=90, color=colour, zorder=5)
        plots["validation"] = _finish(
            figure,
            axes,
            "Validation pass@1 per language",
            "round (large marker: pooled; green ● accepted, red ✕ rejected)",
            "candidate pass@1 (%)",
            gated,
            True,
        )
    measured = [v for v in views if "lower_bound" in v.audit_evidence]
    if measured:
        plots["guard"] = _guard_plot(measured)
    audited = [v for v in views if v.audit.get("candidate", {}).get("total")]
    if audited:  # (none where audit.suites is empty: no greedy answers were asked)
        figure, axes = plt.subplots(figsize=(7.5, 3.0))
        for side, style in (("parent", "s--"), ("candidate", "o-")):
            points = [
                (v.number, 100 * v.audit[side]["passed"] / v.audit[side]["total"])
                for v in audited
                if side in v.audit and v.audit[side].get("total")
            ]
            if points:
                axes.plot(*zip(*points, strict=True), style, label=side)
        plots["audit"] = _finish(
            figure, axes, "Audit pass@1", "round", "audit pass@1 (%)", audited, False
        )
    trained = [v for v in views if v.loss]
    if trained:
        figure, axes = plt.subplots(figsize=(7.5, 3.0))
        for view in trained:
            axes.plot(range(1, len(view.loss) + 1), view.loss, label=f"round {view.number}")
        plots["loss"] = _finish(
            figure, axes, "Training loss", "optimizer step", "training loss", None, False
        )
    exported = [v for v in views if v.exported]
    if exported:
        figure, axes = plt.subplots(figsize=(7.5, 3.0))
        languages = sorted({lang for v in exported for lang in v.exported})
        bottoms = [0] * len(exported)
        for language in languages:
            heights = [v.exported.get(language, 0) for v in exported]
            axes.bar([v.number for v in exported], heights, bottom=bottoms, label=language)
            bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
        plots["replay"] = _finish(
            figure,
            axes,
            "Rows exported per language (replay included)",
            "round",
            "training rows",
            exported,
            True,
        )
    return plots


def _guard_plot(measured: list[RoundView]) -> str:
    """The audit's own measure per round: the change with its one-sided lower bound (the
    error bar reaches down to it) against the bar it had to clear, on an axis that holds
    zero, the bar and every bound, so that neither a loss nor a gain is exaggerated."""
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7.5, 3.0))
    unit = "points"
    for view in measured:
        unit, change, lower, bar = guard_measure(view.audit_evidence)
        colour = "green" if view.accepted else "red"
        axes.errorbar(
            [view.number], [change], yerr=[[change - lower], [0.0]], fmt="o", color=colour,
            capsize=4,
        )  # fmt: skip
        axes.hlines(bar, view.number - 0.3, view.number + 0.3, colors="black", linestyles="--")
    values = [0.0]
    for view in measured:
        values += list(guard_measure(view.audit_evidence)[1:])
    span = max(values) - min(values) or 1.0
    axes.set_ylim(min(values) - 0.15 * span, max(values) + 0.15 * span)
    axes.axhline(0.0, color="grey", linewidth=0.8)
    axes.plot([], [], "k--", label="bar: the lower bound must stay above it")
    return _finish(
        figure,
        axes,
        "Audit: what the decision rested on (change, lower bound)",
        "round (green accepted, red rejected)",
        f"change ({unit})",
        measured,
        False,
    )


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _decisions(views: list[RoundView]) -> str:
    rows = []
    for v in views:
        gate = v.gate
        audit = v.audit.get("candidate")
        verdict = {True: "accepted", False: "rejected", None: "unfinished"}[v.accepted]
        audited = f"{audit['passed']}/{audit['total']}" if audit and audit.get("total") else "-"
        if v.audit_evidence.get("lower_bound") is not None:
            unit, change, lower, bar = guard_measure(v.audit_evidence)
            audited += f"; {change:+.3g} {unit} (bound {lower:+.3g}, bar {bar:+.3g})"
        if "total" in gate:
            passed = f"{gate['before']} → {gate['after']} / {gate['total']}"
            changed = f"+{gate['gained']} / -{gate['lost']}"
            p_value = f"{gate['mcnemar_p']:.3g}" if gate.get("mcnemar_p") is not None else "-"
        else:
            passed = changed = p_value = "-"
        rows.append(
            "<tr>"
            f"<td>{v.number}</td><td class='{verdict}'>{verdict}</td>"
            f"<td>{_e(passed)}</td><td>{_e(changed)}</td><td>{_e(p_value)}</td>"
            f"<td>{_e(audited)}</td>"
            f"<td>{_e(v.decision)}</td></tr>"
        )
    return (
        "<table class='decisions'><tr><th>round</th><th>decision</th>"
        "<th>validation passed (baseline → candidate)</th><th>gained / lost</th>"
        "<th>McNemar p</th><th>audit: greedy; the rule's measure</th><th>why</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _changes(view: RoundView) -> str:
    parts = []
    for title, pairs in (("gained", view.gained), ("lost", view.lost)):
        if not pairs:
            continue
        rows = "".join(
            f"<tr><td>{_e(new.get('language', ''))}<br><small>{_e(new.get('family', ''))}"
            f"</small><br><small>{_e(new['id'][:12])}</small></td>"
            f"<td><small>{_e(old.get('status', ''))}</small><pre>{_e(old.get('answer', ''))}"
            f"</pre></td><td><small>{_e(new.get('status', ''))}</small>"
            f"<pre>{_e(new.get('answer', ''))}</pre></td></tr>"
            for old, new in pairs[:MAX_TASKS_SHOWN]
        )
        more = len(pairs) - MAX_TASKS_SHOWN
        parts.append(
            f"<h4>{title}: {len(pairs)} task(s)</h4><table class='changes {title}'>"
            "<tr><th>task</th><th>baseline's answer</th><th>candidate's answer</th></tr>"
            + rows
            + "</table>"
            + (f"<p>… and {more} more</p>" if more > 0 else "")
        )
    if not parts:
        return ""
    return f"<h3>Round {view.number}</h3>" + "".join(parts)


def _digests(root: Path) -> str:
    """Each finished round's root digest (`loop/digest.py`), to save outside the session:
    `codeloop verify --expect-digest D` later shows whether anything of the chain changed."""
    from codeloop.loop.digest import digests

    found = digests(root)
    if not found:
        return ""
    rows = "".join(f"<tr><td>{n}</td><td><code>{_e(d)}</code></td></tr>" for n, d in found.items())
    return (
        "<h3>Round digests</h3><p>Save these outside the session; "
        "<code>codeloop verify --expect-digest DIGEST</code> fails if any file of the chain "
        "changed since.</p><table class='digests'><tr><th>round</th><th>digest</th></tr>"
        + rows
        + "</table>"
    )


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; width: 100%; }
th, td { border: 1px solid #ccc; padding: 4px 6px; vertical-align: top; font-size: 13px; }
th { background: #f3f3f3; text-align: left; }
td.accepted { color: #176117; font-weight: bold; }
td.rejected { color: #a11; font-weight: bold; }
pre { white-space: pre-wrap; font-size: 12px; margin: 2px 0; max-height: 16em; overflow: auto; }
.plot svg { max-width: 100%; height: auto; }
"""


def render(root: Path) -> str:
    """The report's HTML for the session at `root`."""
    views = gather(root)
    plots = _plots(views)
    status = _read(store.SessionPaths(root).status) or {}
    titles = {
        "validation": "Validation",
        "guard": "The audit's decision",
        "audit": "Audit pass@1 (greedy, for reference)",
        "loss": "Training",
        "replay": "Training data",
    }
    sections = "".join(
        f"<h2>{titles[name]}</h2><div class='plot' id='plot-{name}'>{svg}</div>"
        for name, svg in plots.items()
    )
    changes = "".join(_changes(view) for view in views)
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>codeloop report: {_e(root.resolve().name)}</title>"
        f"<style>{STYLE}</style></head><body>"
        f"<h1>codeloop session {_e(root.resolve().name)}</h1>"
        f"<p>{len(views)} round(s); retained adapter: "
        f"<code>{_e(status.get('retained_adapter') or 'base model')}</code>; "
        f"report by codeloop {_e(__version__)}.</p>"
        "<h2>Decisions</h2>"
        + _decisions(views)
        + _digests(root)
        + sections
        + "<h2>Tasks gained and lost</h2>"
        + (changes or "<p>No validation task changed its verdict.</p>")
        + "</body></html>\n"
    )


def write_report(root: str | Path) -> Path:
    """Write `root/report.html` and return its path."""
    root = Path(root)
    if not store.SessionPaths(root).config.exists():
        from codeloop.errors import CodeloopError

        raise CodeloopError(f"{root}: not a session folder (no config.toml)")
    path = root / "report.html"
    store.write_text(path, render(root))
    return path
