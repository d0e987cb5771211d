"""What a person sees of a round: the live heartbeat, one line per phase, the round's table.

Pure functions from a round folder (or a heartbeat) to Rich renderables and plain
strings, so that `codeloop run` (while it works) and `codeloop status` (any time
later, from another process) show the same numbers from the same files. They only
read artifacts; a file that is missing means the phase has not finished yet and is
shown as pending, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from codeloop import store
from codeloop.errors import IntegrityError
from codeloop.loop.common import PHASES

ANSWERING_PHASES = ("collect", "baseline", "candidate", "audit-parent", "audit-candidate")
"""Phases that ask the model and check answers, so they have per-language pass counts."""

PENDING = "…"
_ROUND = re.compile(r"round-(\d+)$")


# --- reading -------------------------------------------------------------------------------


def result(folder: Path, phase: str) -> dict[str, Any] | None:
    """PHASE.json of a round, or None while the phase has not finished."""
    return store.read(folder / f"{phase}.json", None)


def round_number(folder: Path) -> int:
    """The number in a `round-NNNNNN` folder name (0 if the name is not one)."""
    match = _ROUND.search(folder.name)
    return int(match.group(1)) if match else 0


def phases_done(folder: Path) -> list[str]:
    """The phases whose PHASE.json exists, in round order."""
    return [phase for phase in PHASES if (folder / f"{phase}.json").exists()]


def audit_summary(folder: Path, phase: str) -> dict[str, Any] | None:
    """An audit's summary.json (counts per language), when that audit ran."""
    return store.read(folder / phase / "summary.json", None)


def phase_totals(folder: Path, phase: str) -> dict[str, int]:
    """Tasks per language the phase answers, from the round's task files.

    The heartbeat says how many tasks of each language were checked so far; this is
    the denominator, so that "3/8" can be shown instead of a bare 3.
    """
    if phase in ("audit-parent", "audit-candidate"):
        name, part = "audit-tasks.json", "tasks"
    elif phase in ("collect", "baseline", "candidate"):
        name, part = "tasks.json", "train" if phase == "collect" else "validation"
    else:
        return {}
    try:
        tasks = (store.read(folder / name, None) or {}).get(part, [])
    except IntegrityError:  # the phase itself reports a broken file, with its own message
        return {}
    totals: dict[str, int] = {}
    for task in tasks:
        totals[task["language"]] = totals.get(task["language"], 0) + 1
    return totals


def solved_so_far(folder: Path) -> dict[str, int]:
    """Train tasks solved per language in collect of this round and all earlier ones.

    Export replays verified train answers of every round up to this one, so a
    language with none here has no verified row at all, while one with some but no
    exported row was cut by export's per-language minimum or length limit.
    """
    number = round_number(folder)
    counts: dict[str, int] = {}
    for sibling in sorted(folder.parent.glob("round-*")):
        if not sibling.is_dir() or not 0 < round_number(sibling) <= number:
            continue
        collected = result(sibling, "collect") or {}
        for language, entry in collected.get("languages", {}).items():
            counts[language] = counts.get(language, 0) + int(entry.get("passed", 0))
    return counts


# --- formatting ----------------------------------------------------------------------------


def rate(passed: int | None, total: int | None) -> str:
    """`0.667 (2/3)`: the rate for comparing, the counts for judging how much it means."""
    if passed is None or not total:
        return PENDING if passed is None else "-"
    return f"{passed / total:.3f} ({passed}/{total})"


def _counts(languages: Mapping[str, Mapping[str, int]]) -> str:
    return ", ".join(
        f"{lang} {v.get('passed', 0)}/{v.get('total', 0)}" for lang, v in languages.items()
    )


def _adapter(name: str | None) -> str:
    return name or "base model"


def _languages(*sources: Iterable[str]) -> list[str]:
    """Languages in the order first seen across sources (config order where it comes first)."""
    seen: dict[str, None] = {}
    for source in sources:
        for language in source:
            seen.setdefault(language, None)
    return list(seen)


# --- the live heartbeat --------------------------------------------------------------------


def heartbeat_rows(
    beat: Mapping[str, Any], totals: Mapping[str, int] | None = None
) -> list[tuple[str, int, int | None, int]]:
    """(language, checked, tasks of that language or None, passed) from a heartbeat.

    `seen` and `passed` are optional heartbeat fields that only answering phases
    write; any other heartbeat gives no rows.
    """
    seen: Mapping[str, int] = beat.get("seen") or {}
    passed: Mapping[str, int] = beat.get("passed") or {}
    if not seen and not passed:
        return []
    totals = totals or {}
    return [
        (language, int(seen.get(language, 0)), totals.get(language), int(passed.get(language, 0)))
        for language in _languages(totals, seen, passed)
    ]


def _checked(checked: int, total: int | None) -> str:
    return f"{checked}/{total}" if total else str(checked)


def heartbeat_table(
    beat: Mapping[str, Any], totals: Mapping[str, int] | None = None
) -> Table | None:
    """A small table, one column per language: tasks checked and passed so far."""
    rows = heartbeat_rows(beat, totals)
    if not rows:
        return None
    table = Table(box=None, padding=(0, 2, 0, 0), show_edge=False)
    table.add_column("", style="dim")
    for language, *_rest in rows:
        table.add_column(language, justify="right")
    table.add_row("checked", *(_checked(checked, total) for _l, checked, total, _p in rows))
    table.add_row(
        "passed",
        *(
            f"{good} ({good / checked:.0%})" if checked else str(good)
            for _l, checked, _t, good in rows
        ),
    )
    return table


def heartbeat_line(beat: Mapping[str, Any], totals: Mapping[str, int] | None = None) -> str:
    """The heartbeat in one plain line: phase, tasks done of total, passed per language."""
    line = f"{beat.get('phase', '?')} {beat.get('completed', 0)}/{beat.get('total', 0)}"
    if beat.get("task"):
        line += f" ({beat['task']})"
    rows = heartbeat_rows(beat, totals)
    if rows:
        line += "; passed " + ", ".join(
            f"{language} {good}/{checked}" + (f" (of {total})" if total else "")
            for language, checked, total, good in rows
        )
    return line


# --- one line per finished phase -----------------------------------------------------------


def phase_line(folder: Path, phase: str) -> str:
    """What a finished phase found, in one plain line (the launcher prints it as it ends)."""
    done = result(folder, phase)
    if done is None:
        return f"{phase}: not finished"
    if done.get("skipped"):
        return f"{phase}: skipped ({done.get('reason', '')})"
    if phase == "prepare":
        return (
            f"prepare: {done.get('train', 0)} train and "
            f"{done.get('validation', 0)} validation tasks"
        )
    if phase == "collect":
        return (
            f"collect: {done.get('passed', 0)}/{done.get('total', 0)} train tasks passed "
            f"({_counts(done.get('languages', {}))})"
        )
    if phase == "export":
        rows = ", ".join(f"{k} {v}" for k, v in done.get("languages", {}).items())
        state = "ready" if done.get("ready") else f"not ready: {done.get('reason', '')}"
        return f"export: {done.get('rows', 0)} verified rows ({rows}); {state}"
    if phase in ("baseline", "candidate"):
        return (
            f"{phase}: macro pass@1 {done.get('macro_pass_at_1', 0.0):.3f} "
            f"({_counts(done.get('languages', {}))})"
        )
    if phase == "train":
        return f"train: {done.get('steps', 0)} steps"
    if phase == "gate":
        return f"gate: {gate_text(done)}"
    if phase in ("audit-parent", "audit-candidate"):
        summary = audit_summary(folder, phase) or {}
        if not summary.get("total") and done.get("likelihood_sha256"):
            return f"{phase}: reference likelihoods scored (no greedy answers: audit.suites empty)"
        return (
            f"{phase}: {summary.get('passed', 0)}/{summary.get('total', 0)} passed "
            f"({_counts(summary.get('languages', {}))})"
        )
    if phase == "finish":
        retained = _adapter(done.get("retained_adapter"))
        return f"finish: {done['decision']}; retained adapter: {retained}"
    return f"{phase}: done"


# --- the round's table ---------------------------------------------------------------------


def guard_measure(evidence: Mapping[str, Any]) -> tuple[str, float, float, float]:
    """(unit, change, lower bound, the bar it must clear) of a paired or likelihood
    rule's evidence, in the unit the decision used (points, or nats per token)."""
    scale, unit = (1.0, "nats/token") if evidence.get("rule") == "likelihood" else (100.0, "points")
    bar = -evidence.get("margin", 0.0) or 0.0  # (no "-0.0")
    return unit, scale * evidence["change"], scale * evidence["lower_bound"], scale * bar


def paired_text(evidence: Mapping[str, Any], where: str) -> str:
    """A paired rule's estimate in one line: rates, change, its lower bound and the bar."""
    if evidence.get("rule") == "likelihood":
        _unit, change, lower, bar = guard_measure(evidence)
        return (
            f"likelihood of {evidence['tasks']} verified reference programs: parent "
            f"{evidence['parent_rate']:.3f}, candidate {evidence['candidate_rate']:.3f} nats per "
            f"token, change {change:+.3f} (lower {100 * (1 - evidence['alpha']):.0f}% bound "
            f"{lower:+.3f}, must be above {bar:+.3f})"
        )
    bar = -evidence.get("margin", 0.0) or 0.0  # (no "-0.0")
    looks = evidence.get("looks")
    if looks:
        last = looks[-1]
        return (
            f"sampled on {evidence['tasks']} {where} tasks, looked at "
            f"{', '.join(str(look['samples']) for look in looks)} samples per side: parent "
            f"{100 * evidence['parent_rate']:.1f}%, candidate "
            f"{100 * evidence['candidate_rate']:.1f}%, change "
            f"{100 * evidence['change']:+.1f} points, z {last['z']:.2f} (promising "
            f"above {evidence['efficacy_z']}; stopped: {last['stop']})"
        )
    return (
        f"sampled {evidence['samples']}x per side on {evidence['tasks']} {where} tasks: "
        f"parent {100 * evidence['parent_rate']:.1f}%, candidate "
        f"{100 * evidence['candidate_rate']:.1f}%, change {100 * evidence['change']:+.1f} "
        f"points (lower {100 * (1 - evidence['alpha']):.0f}% bound "
        f"{100 * evidence['lower_bound']:+.1f}, must be above {100 * bar:+.1f})"
    )


def gate_text(gate: Mapping[str, Any]) -> str:
    """The gate's verdict with its numbers, and why it failed when it did."""
    if gate.get("skipped"):
        return f"skipped ({gate.get('reason', '')})"
    gained, lost = gate.get("gained", 0), gate.get("lost", 0)
    text = (
        f"{'promising' if gate.get('promising') else 'not promising'}: gained {gained}, "
        f"lost {lost} (net {gained - lost:+d}), McNemar p = {gate.get('mcnemar_p', 1.0):.3g}"
    )
    sampled = gate.get("confirmation")
    if sampled and sampled.get("rule") == "paired":
        text += "; " + paired_text(sampled, "validation")
    elif sampled and sampled["confirmed"]:
        text += (
            f"; confirmed by samples: candidate alone {sampled['pooled_candidate_only']}, "
            f"parent alone {sampled['pooled_parent_only']} of "
            f"{sum(t['pairs'] for t in sampled['tasks'])} pairs, p = {sampled['pooled_p']:.3g}"
        )
    if gate.get("reasons"):
        text += "; " + "; ".join(gate["reasons"])
    return text


def validation_rows(folder: Path) -> list[tuple[str, str, str, str, str]]:
    """(language, baseline, candidate, gained, lost) per language, then the macro row.

    Pass@1 is on the round's validation tasks; gained/lost are the gate's paired counts.
    A phase not finished yet shows as pending.
    """
    baseline = result(folder, "baseline") or {}
    candidate = result(folder, "candidate") or {}
    gate = result(folder, "gate") or {}
    base_langs = baseline.get("languages", {})
    cand_langs = candidate.get("languages", {})
    gate_langs = gate.get("languages", {})
    rows = []

    def count(entry: Mapping[str, Any], key: str) -> str:
        return str(entry[key]) if key in entry else PENDING

    for language in _languages(base_langs, cand_langs, gate_langs):
        b, c, g = (
            base_langs.get(language, {}),
            cand_langs.get(language, {}),
            gate_langs.get(language, {}),
        )
        rows.append(
            (
                language,
                rate(b.get("passed"), b.get("total")),
                rate(c.get("passed"), c.get("total")),
                count(g, "gained"),
                count(g, "lost"),
            )
        )

    def macro(done: Mapping[str, Any]) -> str:
        return f"{done['macro_pass_at_1']:.3f}" if "macro_pass_at_1" in done else PENDING

    rows.append(
        ("macro", macro(baseline), macro(candidate), count(gate, "gained"), count(gate, "lost"))
    )
    return rows


def export_rows(folder: Path) -> list[tuple[str, str, str, str, str]]:
    """(language, solved this round, solved in all rounds so far, exported rows, note)."""
    exported = result(folder, "export") or {}
    collected = (result(folder, "collect") or {}).get("languages", {})
    solved = solved_so_far(folder)
    counts: Mapping[str, int] = exported.get("languages", {})
    rows = []
    for language in _languages(counts, collected, solved):
        entry = collected.get(language, {})
        rows_out = int(counts.get(language, 0))
        found = solved.get(language, 0)
        note = ""
        if not found:
            note = "no verified row"
        elif not rows_out:
            note = "too few verified rows to export"
        rows.append(
            (
                language,
                f"{entry.get('passed', 0)}/{entry.get('total', 0)}" if entry else PENDING,
                str(found),
                str(rows_out),
                note,
            )
        )
    return rows


def training_skipped(folder: Path) -> bool:
    """True when export said there are not enough verified rows to train this round."""
    exported = result(folder, "export")
    return exported is not None and not exported.get("ready", True)


def round_lines(folder: Path) -> list[str]:
    """The plain lines under the table: collect, export, gate, audit, decision."""
    lines = []
    collected = result(folder, "collect")
    if collected is not None:
        lines.append(phase_line(folder, "collect"))
    exported = result(folder, "export")
    if exported is not None and exported.get("ready"):
        lines.append(phase_line(folder, "export"))
    elif exported is not None:
        lines.append(
            f"training skipped: export not ready: {exported.get('reason', '')} "
            f"({exported.get('rows', 0)} rows exported)"
        )
        missing = [row[0] for row in export_rows(folder) if row[4] == "no verified row"]
        if missing:
            lines.append(f"no verified row yet: {', '.join(missing)}")
    gate = result(folder, "gate")
    if gate is not None and not gate.get("skipped"):
        lines.append(f"gate: {gate_text(gate)}")
    if not training_skipped(folder):
        lines.extend(_audit_lines(folder))
    finish = result(folder, "finish")
    if finish is None:
        running = [p for p in PHASES if p not in phases_done(folder)]
        lines.append(
            f"decision: pending (next phase: {running[0]})" if running else "decision: pending"
        )
    else:
        lines.append(f"decision: {finish['decision']}")
        for reason in finish.get("reasons", []):
            lines.append(f"  {reason}")
        lines.append(f"retained adapter: {_adapter(finish.get('retained_adapter'))}")
    return lines


def _audit_task_names(folder: Path) -> dict[str, str]:
    """`family (language) ` of each audit task by id, from the candidate's audit rows, so
    a rejection names the problems that decided it, not only their hashes."""
    rows = store.read(folder / "audit-candidate" / "rows.json", {}).get("rows", [])
    return {
        row["id"]: f"{row['family'].split('/')[-1]} ({row['language']}) "
        for row in rows
        if isinstance(row, dict) and row.get("family") and row.get("language")
    }


def _audit_lines(folder: Path) -> list[str]:
    finish = result(folder, "finish") or {}
    audit = finish.get("comparisons", {}).get("audit")
    if audit:
        lines = []
        if audit["total"]:  # greedy answers were asked (audit.suites)
            lines.append(
                f"audit: parent {audit['before']}/{audit['total']}, candidate "
                f"{audit['after']}/{audit['total']}; gained {audit['gained']}, "
                f"lost {audit['lost']}"
            )
        evidence = audit.get("confirmation")
        if evidence and evidence.get("rule") in ("paired", "likelihood"):
            return [*lines, ("  " if lines else "audit: ") + paired_text(evidence, "audit")]
        names = _audit_task_names(folder)
        for task in (evidence or {}).get("tasks", []):
            verdict = "counted" if task["counted"] else "noise, excused"
            name = names.get(task["id"], "")
            lines.append(
                f"  {task['flip']} {name}{task['id']}: parent {task['parent_passes']}/"
                f"{task['pairs']}, "
                f"candidate {task['candidate_passes']}/{task['pairs']} samples, "
                f"p={task['p']:.3g} ({verdict})"
            )
        return lines
    parent = result(folder, "audit-parent")
    if parent is None:
        return []
    if parent.get("skipped"):
        return [f"audit: skipped ({parent.get('reason', '')})"]
    lines = []
    for phase in ("audit-parent", "audit-candidate"):
        summary = audit_summary(folder, phase)
        if summary is not None:
            lines.append(f"{phase}: {summary.get('passed', 0)}/{summary.get('total', 0)} passed")
    return lines


def round_table(folder: Path) -> Table:
    """Validation pass@1 per language, or (training skipped) exported rows per language."""
    number = round_number(folder)
    if training_skipped(folder):
        table = Table(title=f"round {number}: training skipped: export not ready")
        for column in ("language", "solved", "solved so far", "exported rows", ""):
            table.add_column(column, justify="left" if column in ("language", "") else "right")
        for row in export_rows(folder):
            table.add_row(*row)
        return table
    table = Table(title=f"round {number}: validation pass@1")
    table.add_column("language")
    for column in ("baseline", "candidate", "gained", "lost"):
        table.add_column(column, justify="right")
    rows = validation_rows(folder)
    for row in rows[:-1]:
        table.add_row(*row)
    table.add_section()
    table.add_row(*rows[-1], style="bold")
    return table


def round_view(folder: Path) -> RenderableType:
    """The round's table and its lines, ready to print (the table once export has run)."""
    table = [round_table(folder)] if result(folder, "export") is not None else []
    return Group(*table, *(Text(line) for line in round_lines(folder)))
