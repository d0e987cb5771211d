"""Useful tokens/s and peak memory of the CPU engines on the bundled SmolLM2, in one run.

Rows: hf (transformers, float32) and llamacpp (batched llama.cpp decoding) at batch
8 and 16, and llamacpp-packed (llamacpp with llama.cpp's own weight placement) at
batch 8, each with and without a LoRA adapter. Every row answers the same prompts:
codeloop's own recipe (contract system turn, worked example, task) for tier-1 dev
tasks of the built-in curriculum, languages taken in turn, greedy, `max_tokens` as the
cpu-demo preset. Useful tokens are generated tokens up to each answer's end (padding
and anything after the closed code block are not counted); each timed call comes
after a warm-up call on the same engine and adapter. Each (engine, batch) runs in
its own subprocess, so its peak RSS is its own; hf and llamacpp at one batch size run
back to back, so their ratio sees the same machine load.

The adapter is trained here through `codeloop.train.trainer.run` (the code `codeloop
train` runs) on worked-example answers, so it is a real, non-zero LoRA adapter of the
shape the loop produces (rank 8, all-linear), unless --adapter names one.

Besides speed it reports whether llamacpp's greedy answers equal hf's (hf runs the
dequantized Q4_1 weights in float32, llama.cpp its Q4_1 kernels, so some tokens may
differ) and, with --check, how many answers pass their task's hidden tests in the
sandbox. Prints a table and appends it to bench/RESULTS.md.

With --profile, each llamacpp row says where its CPU time goes, kernel by kernel
(bench/kernel_profile.py, Linux perf); --sgemm-off adds the merged rows without
llamafile's sgemm, for the side-by-side comparison of that lever.

    python -m bench.engines [--prompts 16] [--max-tokens 256] [--adapter PATH] [--check]
        [--merged q8_0] [--placement bind,passive,active] [--sgemm-off] [--profile]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.kernel_profile import GROUPS, perf_available, profiled
from bench.kernel_profile import cells as profile_cells
from bench.results import record

ROOT = Path(__file__).resolve().parents[1]  # the repository: `-m bench...` runs from it

ROWS = [("hf", 8), ("llamacpp", 8), ("llamacpp-packed", 8), ("hf", 16), ("llamacpp", 16)]
"""(engine, batch); `--merged TYPE` adds llamacpp-TYPE-merged at batch 8 and 16: the
weights re-typed as TYPE and the adapter merged into them (`engine.weights`,
`engine.merge_adapter`; codeloop/engines/gguf_weights.py) instead of applied at run
time. llamacpp-packed: llamacpp with llama.cpp's own weight placement,
which on a CPU with AMX packs the tied embedding a second time (the engine keeps it
once, `codeloop.engines.llamacpp_placement`); the row prices that memory in speed.
After every other row, hf batch 8 runs once more (hf-again): the ratios are taken
against the mean of its two runs, so that drift over the run shows and is shared."""


PLACEMENTS = {
    "bind": {"OMP_PROC_BIND": "close", "OMP_PLACES": "cores"},
    "passive": {"OMP_WAIT_POLICY": "passive"},
    "active": {"OMP_WAIT_POLICY": "active"},
}
"""`--placement NAME` adds a llamacpp@NAME row at batch 8: llamacpp (the preset's
weights, run-time LoRA) with these OpenMP settings in its process's environment, read
by libgomp when llama.cpp starts its threads. bind: each of llama.cpp's threads pinned
to a core of its own; passive: threads that wait for the next graph sleep at once;
active: they spin. Unset: libgomp's defaults (unbound; spin a while, then sleep)."""

SGEMM_OFF = {"CODELOOP_SGEMM": "off"}
"""`--sgemm-off` adds llamacpp-TYPE-merged@nosgemm rows at batch 8 and 16, and
llamacpp@nosgemm at batch 8, each right after its twin: those rows with llamafile's
sgemm turned off in their process (scripts/patch_llama_cpp.py), so ggml's per-row dot
products multiply every weight, as before setup.sh built it in. Each pair is one lever measured side by side
(for the Q4_1 file, whose layers sgemm does not take, only its Q8_0 output projection
changes)."""
ENVIRONMENTS = {**PLACEMENTS, "nosgemm": SGEMM_OFF}
"""A row's name after its `@`: the environment its process runs with."""


def bench_tasks(count: int) -> list:
    """`count` tier-1 dev tasks of the cpu-demo split, the languages taken in turn."""
    from bench.shared import dev_tasks
    from codeloop import recipe
    from codeloop.config import load_preset

    preset = load_preset("cpu-demo")
    languages = list(recipe.FENCE_TAGS)
    variants = 1
    while True:
        pairs = dev_tasks(languages, variants, preset.tasks.salt, preset.tasks.splits)
        by_language = {lang: [t for t, _title in pairs if t.language == lang] for lang in languages}
        ordered = [
            by_language[lang][i]
            for i in range(max(map(len, by_language.values())))
            for lang in languages
            if i < len(by_language[lang])
        ]
        if len(ordered) >= count or variants > 8:
            return ordered[:count]
        variants += 1


def train_adapter(folder: Path, threads: int) -> Path:
    """A LoRA adapter trained for a few steps on the worked example in every language."""
    import torch

    from bench.shared import write_dataset
    from codeloop import recipe
    from codeloop.config import BUNDLED_MODEL, ExportConfig, TrainConfig
    from codeloop.train.trainer import TrainRequest, run

    torch.set_num_threads(threads)
    rows = []
    for language in recipe.FENCE_TAGS:
        task = {"language": language, "statement": recipe.WORKED_PROBLEM, "kind": "stdio"}
        answer = recipe.fenced(recipe.WORKED_ANSWERS[language], language)
        rows.append(
            {
                "task_id": f"bench-{language}",
                "language": language,
                "split": "train",
                "messages": [
                    *recipe.contract_messages(task),
                    {"role": "assistant", "content": answer},
                ],
                "verification": {"kind": "local_execution", "passed": True},
                "provenance": {"dataset": "bench", "revision": "0", "source_row_sha256": "0"},
            }
        )
    data = write_dataset(folder / "train.jsonl", rows)
    run(
        TrainRequest(
            dataset=data,
            output=folder / "adapter",
            base=BUNDLED_MODEL,
            train=TrainConfig(
                steps_per_round=12,
                max_epochs=6.0,
                batch_size=4,
                gradient_accumulation=1,
                learning_rate=1e-3,
                save_steps=10_000,
                report_to=[],
            ),
            export=ExportConfig(min_examples=1, min_per_language=0, max_length=4096),
            languages=list(recipe.FENCE_TAGS),
            seed=3407,
            precision="float32",
            echo=False,
        )
    )
    return folder / "adapter"


def write_job(scratch: Path, tasks: list, warmup: list, args: argparse.Namespace):
    """(job file, adapter folder) for the workers: the prompts, the settings, and
    `args.adapter` or one trained here in `scratch`."""
    from codeloop import recipe

    adapter = args.adapter
    if adapter is None:
        started = time.monotonic()
        adapter = str(train_adapter(scratch, args.threads))
        print(f"adapter trained in {time.monotonic() - started:.0f} s", flush=True)
    job = scratch / "job.json"
    job.write_text(
        json.dumps(
            {
                "conversations": [recipe.messages(task) for task in tasks],
                "warmup": [recipe.messages(task) for task in warmup],
                "max_tokens": args.max_tokens,
                "threads": args.threads,
                "adapter": adapter,
            }
        )
    )
    return job, adapter


def peak_rss_mib() -> float:
    """This process's peak resident memory (VmHWM).

    Not getrusage's ru_maxrss: Linux keeps it across execve, so a worker started by a
    parent that trained the adapter would report the parent's peak.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def worker_engine(args: argparse.Namespace, max_tokens: int, threads: int):
    """The engine `--worker` names, at `--batch`."""
    from codeloop.config import BUNDLED_MODEL, EngineConfig

    if args.worker in ("hf", "hf-again"):
        import torch

        from codeloop.engines.hf import HFEngine

        torch.set_num_threads(threads)
        return HFEngine(
            EngineConfig(
                model=BUNDLED_MODEL,
                precision="float32",
                batch_size=args.batch,
                max_tokens=max_tokens,
            )
        )
    from codeloop.engines.llamacpp import LlamaCppEngine

    merged = re.fullmatch(r"llamacpp-(\w+)-merged", args.worker.split("@")[0])
    engine = LlamaCppEngine(
        EngineConfig(
            kind="llamacpp",
            model=BUNDLED_MODEL,
            batch_size=args.batch,
            max_tokens=max_tokens,
            weights=merged.group(1) if merged else None,
            merge_adapter=bool(merged),
        ),
        threads=threads,
        place_weights=args.worker != "llamacpp-packed",
    )
    engine.decoder.kv_type = args.kv
    return engine


def worker(args: argparse.Namespace) -> None:
    """One engine at one batch size, base then adapter; JSON results to --out."""
    job = json.loads(Path(args.job).read_text())
    conversations, max_tokens, threads = job["conversations"], job["max_tokens"], job["threads"]
    engine = worker_engine(args, max_tokens, threads)
    out = {}
    for label, path in (("base", None), ("adapter", job["adapter"])):
        started = time.monotonic()
        engine.load_adapter(path)  # merged rows: the merge (or its cache) is timed here
        attach = time.monotonic() - started
        # Warm-up: as many other tasks of the same languages, as a round's previous
        # batch; weights paged in, kernels, adapter and (llamacpp) context built and
        # the prompt prefixes those tasks share cached.
        engine.generate(job["warmup"], max_tokens=8)
        clocks = getattr(engine, "decoder", None)  # llamacpp's decoder; hf has none
        before = dict(clocks.stats) if clocks else {}
        started = time.monotonic()
        results = engine.generate(conversations, max_tokens=max_tokens)
        seconds = time.monotonic() - started
        after = clocks.stats if clocks else {}
        split = {key: after[key] - before.get(key, 0) for key in after}
        tokens = sum(row[0].tokens for row in results)
        out[label] = {
            "seconds": seconds,
            "tokens": tokens,
            "rate": tokens / seconds,
            "texts": [row[0].text for row in results],
            "load": os.getloadavg()[0],
            "attach_s": attach,
            "split": split,
        }
        if not args.worker.startswith("hf"):
            # The same call with nothing cached: what a first batch pays.
            engine.decoder.cache.clear()
            started = time.monotonic()
            cold = engine.generate(conversations, max_tokens=max_tokens)
            out[label]["cold_rate"] = tokens / (time.monotonic() - started)
            assert [row[0].text for row in cold] == out[label]["texts"]
            if args.profile:
                # Once more under perf, after the timed calls: their rates stay as they were.
                out[label]["profile"] = profiled(
                    lambda: engine.generate(conversations, max_tokens=max_tokens),
                    Path(args.out).parent,
                    f"{args.worker}-{args.batch}-{label}",
                )
        print(f"{args.worker} batch {args.batch} {label}: {tokens / seconds:.1f} tok/s", flush=True)
    engine.close()
    out["peak_rss_mib"] = peak_rss_mib()
    Path(args.out).write_text(json.dumps(out))


def llama_build() -> str:
    """The CPU features llama.cpp was built with (scripts/setup.sh builds for the CPU)."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode().removeprefix("CPU :")
    return ", ".join(part.split("=")[0].strip() for part in info.split("|") if "= 1" in part)


def split_cell(cell: dict) -> str:
    """Where a warm llamacpp call's seconds went (the decoder's own clocks): prompt
    tokens decoded, next tokens decoded, sampling, and the rest (prefix-cache restores,
    scheduling, detokenizing); "-" for hf."""
    split = cell.get("split") or {}
    if "prompt_seconds" not in split:
        return "- |"
    prompt, decode = split["prompt_seconds"], split["decode_seconds"]
    sample = split["sample_seconds"]
    rest = cell["seconds"] - prompt - decode - sample
    return f"{prompt:.1f} / {decode:.1f} / {sample:.1f} / {rest:.1f} ({split['prompt_tokens']}) |"


def cpu_features() -> str:
    """The CPU's model and the /proc/cpuinfo flags llama.cpp's x86 kernels key on."""
    model, flags = "unknown", set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name") and model == "unknown":
            model = line.split(":", 1)[1].strip()
        elif line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
    wanted = ["avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8"]
    return f"{model}; " + ", ".join(flag for flag in wanted if flag in flags)


def twins(measured: dict, rows: list[tuple[str, int]]) -> str:
    """For each @nosgemm row, how many answers equal its twin's with sgemm on."""
    said = []
    for engine, batch in rows:
        twin = engine.removesuffix("@nosgemm")
        if twin == engine or (twin, batch) not in measured:
            continue
        for label in ("base", "adapter"):
            pairs = zip(
                measured[(engine, batch)][label]["texts"],
                measured[(twin, batch)][label]["texts"],
                strict=True,
            )
            same = [a == b for a, b in pairs]
            said.append(f"{twin} batch {batch} {label} {sum(same)}/{len(same)}")
    return "; ".join(said)


def passes(tasks, texts: list[str]) -> int:
    from bench.shared import check

    return sum(not isinstance(v, str) and v.passed for v in check(tasks, texts))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--adapter", help="a PEFT adapter folder (default: train one here)")
    parser.add_argument("--check", action="store_true", help="run answers in the sandbox")
    parser.add_argument(
        "--merged",
        default="q8_0",
        help="weight types of the merged-adapter llamacpp rows, comma-separated ('': none)",
    )
    parser.add_argument(
        "--placement",
        default="",
        help=f"llamacpp@NAME rows at batch 8, comma-separated: {', '.join(PLACEMENTS)} "
        "(OpenMP thread placement and waiting; see PLACEMENTS)",
    )
    parser.add_argument(
        "--sgemm-off",
        action="store_true",
        help="add the merged rows with llamafile's sgemm off (llamacpp-TYPE-merged@nosgemm)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="where each llamacpp row's CPU time goes, kernel by kernel (Linux perf)",
    )
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument(
        "--only", default="", help="ENGINE:BATCH rows instead of ROWS, e.g. hf:8,llamacpp:8"
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--job", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--kv", default="q8_0", help=argparse.SUPPRESS)  # llamacpp's KV type
    return parser


def _rows(args: argparse.Namespace, parser: argparse.ArgumentParser) -> list[tuple[str, int]]:
    """The (engine, batch) rows the options ask for, in the order they run."""
    args.placement = [name for name in args.placement.split(",") if name]
    unknown = set(args.placement) - set(PLACEMENTS)
    if unknown:
        parser.error(f"--placement: unknown {sorted(unknown)}; known: {', '.join(PLACEMENTS)}")
    base = ROWS
    if args.only:  # the quick form: hf batch 8 and llamacpp batch 8 are what the notes read
        base = [
            (name, int(batch))
            for name, _, batch in (r.partition(":") for r in args.only.split(","))
        ]
        if not {("hf", 8), ("llamacpp", 8)} <= set(base):
            parser.error("--only: needs hf:8 and llamacpp:8 (the ratios and notes read them)")
    rows = base + [
        (f"llamacpp-{kind}-merged", batch)
        for kind in filter(None, args.merged.split(","))
        for batch in (8, 16)
    ]
    rows += [(f"llamacpp@{name}", 8) for name in args.placement]
    if args.sgemm_off:  # each twin right after its row: the least drift between them
        twinned = {("llamacpp", 8)} | {row for row in rows if row[0].endswith("-merged")}
        rows = [
            twin
            for row in rows
            for twin in ([row, (f"{row[0]}@nosgemm", row[1])] if row in twinned else [row])
        ]
    if args.profile and (why := perf_available()):
        parser.error(f"--profile: {why}")
    rows += [("hf-again", 8)]  # the reference once more, last: the run's drift, bounded
    return rows


def _measure(rows, tasks: list, warmup: list, args: argparse.Namespace) -> tuple[dict, str]:
    """Each row in a process of its own: (its measurements by row, the adapter used)."""
    with tempfile.TemporaryDirectory() as scratch:
        job, adapter = write_job(Path(scratch), tasks, warmup, args)
        measured = {}
        for engine, batch in rows:
            out = Path(scratch) / f"{engine}-{batch}.json"
            command = [
                sys.executable,
                "-m",
                "bench.engines",
                "--worker",
                engine,
                "--batch",
                str(batch),
            ]
            command += ["--job", str(job), "--out", str(out)]
            command += ["--profile"] if args.profile else []
            environment = ENVIRONMENTS.get(engine.partition("@")[2], {})
            subprocess.run(command, check=True, env={**os.environ, **environment}, cwd=ROOT)
            measured[(engine, batch)] = json.loads(out.read_text())
    return measured, adapter


def _table(rows, measured: dict, tasks: list, args: argparse.Namespace) -> tuple[list, dict]:
    """(the table's lines, hf batch 8's first and last rates per adapter state)."""
    lines = [
        "| engine | batch | adapter | useful tok/s | tokens | seconds | vs hf batch 8 "
        "| cold tok/s | cold vs hf batch 8 | peak RSS MiB | greedy = hf batch 8 | attach s "
        "| s: prompt / decode / sample / rest (prompt tokens) |"
        + (" passed |" if args.check else ""),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if args.check else ""),
    ]
    speeds = {}
    for label in ("base", "adapter"):
        first, last = measured[("hf", 8)][label]["rate"], measured[("hf-again", 8)][label]["rate"]
        speeds[label] = (first, last)
        reference = {**measured[("hf", 8)][label], "rate": (first + last) / 2}
        for engine, batch in rows:
            row = measured[(engine, batch)]
            cell = row[label]
            same = sum(a == b for a, b in zip(cell["texts"], reference["texts"], strict=True))
            line = (
                f"| {engine} | {batch} | {label} | {cell['rate']:.1f} | {cell['tokens']} | "
                f"{cell['seconds']:.1f} | {cell['rate'] / reference['rate']:.2f}x | "
                + (
                    f"{cell['cold_rate']:.1f} | {cell['cold_rate'] / reference['rate']:.2f}x | "
                    if "cold_rate" in cell
                    else "- | - | "
                )
                + f"{row['peak_rss_mib']:.0f} | {same}/{len(tasks)} | {cell['attach_s']:.1f} | "
                + split_cell(cell)
            )
            if args.check:
                line += f" {passes(tasks, cell['texts'])}/{len(tasks)} |"
            lines.append(line)
    return lines, speeds


def _notes(rows, measured, tasks, warmup, args, adapter, speeds) -> list[str]:
    """What the table's rows and columns mean, and how the adapter was made."""
    trained = args.adapter is None
    if trained:
        made = "trained here (12 steps on worked examples)"
    else:
        report = Path(adapter) / "training.json"
        steps = json.loads(report.read_text()).get("steps") if report.exists() else None
        made = f"{adapter}" + (f" ({steps} training steps)" if steps else "")
    changed = sum(
        a != b
        for a, b in zip(
            measured[("llamacpp", 8)]["base"]["texts"],
            measured[("llamacpp", 8)]["adapter"]["texts"],
            strict=True,
        )
    )
    return [
        f"Prompts: {len(tasks)} tier-1 dev tasks (codeloop's recipe, "
        f"{len(set(t.language for t in tasks))} languages), greedy, max {args.max_tokens} "
        f"tokens. Adapter: {made}"
        f"; it changes {changed}/{len(tasks)} llamacpp answers. Peak RSS is the subprocess's "
        "(one engine, both adapter states). Every timed call follows a warm-up call on "
        f"{len(warmup)} other tasks of the same languages (max 8 tokens); llamacpp keeps "
        "the prompt prefixes they share (its prefix cache); its cold columns time the "
        "same call again with that cache emptied (same answers, checked). "
        "llamacpp-packed: llama.cpp's own weight placement, which on a CPU with AMX packs "
        "the tied embedding a second time for the output projection (llamacpp keeps it "
        "once and reads it from the mapped file)."
        + "".join(
            f" llamacpp@{name}: llamacpp with "
            + ", ".join(f"{key}={value}" for key, value in PLACEMENTS[name].items())
            + "."
            for name in args.placement
        )
        + (
            " @nosgemm: the same weights with llamafile's sgemm turned off in the row's "
            "process (CODELOOP_SGEMM=off): ggml's per-row dot products instead (the Q4_1 "
            "file's layers never take sgemm; its Q8_0 output projection does). "
            "Greedy answers equal with and without sgemm: " + twins(measured, rows) + "."
            if args.sgemm_off
            else ""
        ),
        "",
        "vs hf batch 8: against the mean of hf batch 8's two runs, the first row and the "
        "last (hf-again), so that the machine's drift over the run falls on the ratio from "
        "both ends: "
        + "; ".join(
            f"{label} {first:.1f} then {last:.1f} tok/s" for label, (first, last) in speeds.items()
        )
        + ".",
        "",
        f"llama.cpp build: {llama_build()}. CPU: {cpu_features()}.",
        "s: prompt / decode / sample / rest: the decoder's clocks over the timed call "
        "(llama_decode of prompt tokens, llama_decode of next tokens, sampling, and the rest: "
        "prefix-cache restores, scheduling, detokenizing), with the prompt tokens decoded "
        "(not taken from the prefix cache). "
        "attach s: `load_adapter`'s time; for merged rows the merge into a re-typed file "
        "(cached by the adapter's sha256, so a second load of it reads the cache).",
    ]


def _profile_lines(rows, measured: dict) -> list[str]:
    """Where each llamacpp row's CPU time went, kernel group by group."""
    lines = [
        "",
        "Where a warm call's CPU time goes (`perf record -e cpu-clock`, 999 Hz, over one "
        "more warm call of each llamacpp row after its timed ones; bench/kernel_profile.py "
        "says what each group holds): percent of the samples.",
        "",
        "| engine | batch | adapter | " + " | ".join(GROUPS) + " | largest product kernels |",
        "|---|---|---|" + "---|" * (len(GROUPS) + 1),
    ]
    return lines + [
        f"| {engine} | {batch} | {label} |"
        + profile_cells(measured[(engine, batch)][label].get("profile"))
        for label in ("base", "adapter")
        for engine, batch in rows
        if not engine.startswith("hf")
    ]


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    rows = _rows(args, parser)
    every = bench_tasks(2 * args.prompts)
    tasks, warmup = every[: args.prompts], every[args.prompts :]
    measured, adapter = _measure(rows, tasks, warmup, args)
    lines, speeds = _table(rows, measured, tasks, args)
    lines += ["", *_notes(rows, measured, tasks, warmup, args, adapter, speeds)]
    if args.profile:
        lines += _profile_lines(rows, measured)
    record(
        f"engines, bundled SmolLM2-135M on CPU ({args.threads} threads, bench/engines.py)",
        lines,
    )


if __name__ == "__main__":
    main()
