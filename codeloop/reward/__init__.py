"""The sandbox as a reward for RL trainers: TRL's `reward_funcs` and verl's `compute_score`.

A public module: `CodeReward` and `compute_score` are the API; `codeloop.reward.grpo`
is the `codeloop grpo` recipe built on them.

Usage (TRL)::

    from datasets import Dataset
    from trl import GRPOTrainer
    from codeloop.reward import CodeReward

    rows = Dataset.from_list([
        {"prompt": "Read two integers and print their sum.", "language": "python",
         "cases": '[{"input": "2 3", "output": "5"}, {"input": "10 -4", "output": "6"}]'},
    ])
    trainer = GRPOTrainer(model=..., reward_funcs=CodeReward(), train_dataset=rows, ...)

Usage (verl): `custom_reward_function.path` is this file
(`<site-packages>/codeloop/reward/__init__.py`), `custom_reward_function.name` is
`compute_score`, and `ground_truth` is the row's spec (below) as JSON. Runnable
examples are on `CodeReward` (doctests, run by the test suite).

A reward is what the policy optimises, so it gets the loop's verdicts unchanged:
every completion's program runs contained in the sandbox against hidden tests
compared outside it (stdio) or judged by a test process the program cannot reach
(function tests), so printing a success marker, exiting early or shadowing the
test's names earns nothing. Completions are checked in one parallel batch.

Each dataset row says what to check, in one of three shapes (TRL hands dataset
columns to the reward as keyword lists; verl passes `ground_truth`):
  - `task`: a codeloop task (its JSON object or string), as `codeloop data` writes;
  - stdio: `language`, `cases` (a list of `{"input", "output"}`, or its JSON) and
    optionally `checker` ("lines" by default);
  - function: `language`, `test`, `prompt` (the trusted declaration) and, where the
    language needs it, `entry_point`.

Scoring (`scoring`): "pass" gives 1.0 for a program that passes every hidden test,
else 0.0; "fraction" gives the share of stdio cases passed, every case run (a
program that fails the first case and passes the second gets 0.5; function tests are
all or nothing). A completion without a usable code block gets `format_score`
(0.0 by default; a negative value teaches the format).

The contract term (`contract_score`, w in [0, 1), 0.0 by default) gives small models
a signal before they solve anything: a program that honours the task's I/O contract
(it builds, and its failing case ran to the end within the limits and printed an
answer that was compared: `wrong_answer`, not a compile error, crash, timeout or
limit) gets w, and the correctness above is scaled into the rest:
reward = w * honoured + (1 - w) * correctness, and a passing program gets 1.0. So
format alone earns at most w: any program that merely runs (an empty one included)
earns exactly w, and no failing program reaches 1.0 (bench/reward_spread.py measures
both, and how often each scoring leaves a group of samples without spread).

Infrastructure failures never score 0. A check that met an `environment_error` (a
sandbox worker that died, a killed warm sandbox, a failed Ray chunk) is run again
on freshly started workers before any verdict (`evaluate.scoring.check_requests`):
a right program whose first check was lost this way gets its 1.0. Only a program
that imitates a sandbox error again on the re-run while the language's known-good
probe passes fails (a runtime error, 0.0). What stays an `environment_error` gets
no number at all, whichever it is: the machine cannot check programs (the re-run
and the known-good probe fail too), or the row's own test cannot give a verdict
(`Check.task_error`: a test that never calls the solution, or cannot be built
here). By default that raises `SandboxEnvironmentError`; with
`on_environment_error="none"` the completion's reward is None, which TRL's
GRPOTrainer treats as "not applicable" (NaN, left out of the mean). verl's
`compute_score` raises.

One sandbox for many trainer nodes: `CodeReward(url="http://sandbox-host:8080")`
sends the checks to a `codeloop serve` (docs/SERVICE.md) through
`codeloop.serve.client.ServeClient` instead of local workers, with the token from
`token=` or `$CODELOOP_SERVE_TOKEN`. The verdicts are the same sandbox's; a check the
server cannot give a verdict for (busy past its retries, unreachable, environment
errors) raises `SandboxEnvironmentError` as above, never scores 0.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any, Literal

from codeloop import recipe
from codeloop.config import SandboxConfig
from codeloop.errors import ConfigError, SandboxEnvironmentError
from codeloop.evaluate import scoring
from codeloop.sandbox import Check, CheckRequest
from codeloop.tasks.schema import Case, Task


def _text(completion: Any) -> str:
    """A completion as text: TRL gives a string, or (conversational) a list of messages."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(str(m.get("content", "")) for m in completion if isinstance(m, dict))
    if isinstance(completion, dict):
        return str(completion.get("content", ""))
    raise ConfigError(f"reward: a completion is text or a list of messages, not {completion!r}")


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def spec_request(spec: dict[str, Any], text: str, sandbox: SandboxConfig) -> CheckRequest | None:
    """The sandbox check of one completion against one row's spec (None: no code block)."""
    if "task" in spec and spec["task"] is not None:
        task = Task.model_validate(_json(spec["task"]))
        program = scoring.program_of(task, text)
        return None if program is None else scoring.request(task, program, sandbox)
    language = spec.get("language")
    if not isinstance(language, str):
        raise ConfigError(
            "reward: each row needs `task`, or `language` with `cases` (stdio) or `test` "
            f"(function); got columns {sorted(spec)}"
        )
    try:
        program = recipe.source(text, language)
    except ValueError:
        return None
    if spec.get("test"):
        return CheckRequest(
            language=language,
            program=program,
            test=spec["test"],
            prompt=spec.get("prompt") or "",
            entry_point=spec.get("entry_point"),
            limits=sandbox.limits,
        )
    cases = _json(spec.get("cases"))
    if not cases:
        raise ConfigError(f"reward: a {language} row has neither `cases` nor `test`")
    return CheckRequest(
        language=language,
        program=program,
        cases=[Case.model_validate(case).model_dump() for case in cases],
        checker=spec.get("checker") or "lines",
        limits=sandbox.limits,
    )


class CodeReward:
    r"""A reward function with TRL's `reward_funcs` calling convention.

    Called with the completions and the dataset's columns as keyword lists, it
    returns one reward per completion. Each program runs in the real sandbox:

    >>> from codeloop.reward import CodeReward
    >>> reward = CodeReward()
    >>> right = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
    >>> wrong = "```python\nprint(5)\n```"
    >>> cases = [{"input": "2 3\n", "output": "5\n"}, {"input": "10 -4\n", "output": "6\n"}]
    >>> reward(completions=[right, wrong], language=["python"] * 2, cases=[cases] * 2)
    [1.0, 0.0]

    `wrong` passes the first case only: all or nothing by default, its share of the
    cases with `scoring="fraction"`:

    >>> CodeReward(scoring="fraction")(completions=[wrong], language=["python"], cases=[cases])
    [0.5]

    Every case runs, not only those before the first failure:

    >>> second = "```python\nprint(6)\n```"
    >>> CodeReward(scoring="fraction")(completions=[second], language=["python"], cases=[cases])
    [0.5]

    With a contract term, a program that runs and prints a wrong answer earns a little,
    one that crashes nothing, and only a right one earns 1.0:

    >>> crash = "```python\nprint(1 // 0)\n```"
    >>> CodeReward(contract_score=0.1)(
    ...     completions=[right, wrong, crash], language=["python"] * 3, cases=[cases] * 3)
    [1.0, 0.1, 0.0]

    In a trainer: `GRPOTrainer(model=..., reward_funcs=CodeReward(), train_dataset=rows)`.
    """

    SPEC_COLUMNS = ("task", "language", "cases", "checker", "test", "prompt", "entry_point")

    def __init__(
        self,
        *,
        scoring: Literal["pass", "fraction"] = "pass",
        format_score: float = 0.0,
        contract_score: float = 0.0,
        on_environment_error: Literal["raise", "none"] = "raise",
        sandbox: SandboxConfig | None = None,
        url: str | None = None,
        token: str | None = None,
    ) -> None:
        if scoring not in ("pass", "fraction"):
            raise ConfigError(f"reward: scoring {scoring!r}: choose 'pass' or 'fraction'")
        if not 0.0 <= contract_score < 1.0:
            raise ConfigError(
                f"reward: contract_score {contract_score!r} must be in [0, 1): at 1 or more, "
                "a program that only runs would earn as much as a right one"
            )
        self.contract_score = contract_score
        if on_environment_error not in ("raise", "none"):
            raise ConfigError("reward: on_environment_error is 'raise' or 'none'")
        self.scoring = scoring
        self.format_score = format_score
        self.on_environment_error = on_environment_error
        self.sandbox = sandbox or SandboxConfig()
        self.url, self.token = url, token
        self._client: Any = None
        self.__name__ = f"codeloop_{scoring}"  # TRL names reward columns after it

    def __getstate__(self) -> dict[str, Any]:
        # Trainers ship reward functions to other processes (Ray, multiprocessing): the
        # HTTP client is made again where it is used, never pickled.
        return {**self.__dict__, "_client": None}

    def _remote(self, requests: list[CheckRequest | None]) -> list[Check | None]:
        """The checks from the `codeloop serve` at `self.url` (one shared sandbox for many
        trainer nodes); None where there was no program to check."""
        from codeloop.serve.client import ServeClient

        if self._client is None:
            self._client = ServeClient(self.url or "", self.token)
        asked = [request for request in requests if request is not None]
        checks = iter(self._client.check_many(asked))
        return [next(checks) if request is not None else None for request in requests]

    def __call__(
        self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (), **columns: Any
    ) -> list[float | None]:
        specs = [
            {key: columns[key][index] for key in self.SPEC_COLUMNS if key in columns}
            for index in range(len(completions))
        ]
        return self.score([_text(c) for c in completions], specs)

    def score(self, texts: Sequence[str], specs: Sequence[dict[str, Any]]) -> list[float | None]:
        """One reward per (completion text, row spec), checked in one sandbox batch."""
        requests = [
            spec_request(spec, text, self.sandbox) for text, spec in zip(texts, specs, strict=True)
        ]
        if self.scoring == "fraction":  # partial credit counts every case, not a prefix
            requests = [
                request.model_copy(update={"every_case": True}) if request else None
                for request in requests
            ]
        if self.url:
            checks: Sequence[Check | None] = self._remote(requests)
        else:
            checks = scoring.check_requests(requests, self.sandbox)
        return [
            self._value(request, check) for request, check in zip(requests, checks, strict=True)
        ]

    def _value(self, request: CheckRequest | None, check: Check | None) -> float | None:
        if request is None or check is None:
            return self.format_score
        if check.status == "environment_error":  # no verdict: never a number
            if self.on_environment_error == "none":
                return None
            if check.task_error:
                raise SandboxEnvironmentError(
                    f"reward: a {request.language} row's test cannot give a verdict (the "
                    f"task's fault, not the program's): {check.feedback.strip()[:400]}"
                )
            raise SandboxEnvironmentError(
                f"reward: the sandbox could not check a {request.language} program (also on "
                f"fresh workers), and a known-good {request.language} program fails too: "
                f"{check.feedback.strip()[:400]}"
            )
        if check.passed:
            return 1.0
        correctness = 0.0
        if self.scoring == "fraction" and request.test is None and check.cases_total:
            correctness = check.cases_passed / check.cases_total
        if not self.contract_score:
            return correctness
        honoured = 1.0 if check.status == "wrong_answer" else 0.0
        return self.contract_score * honoured + (1.0 - self.contract_score) * correctness


class AsyncCodeReward(CodeReward):
    """`CodeReward` as an async callable, for trainers that await reward functions: TRL's
    GRPOTrainer (tested with TRL 1.16.0, whose `is_async_callable` reads the `async` on
    `__call__`) gathers async reward functions concurrently with each other, so the
    sandbox batch runs beside other async rewards (a judge model, a remote service)
    instead of before them. The checks run in a worker thread; the rewards and the
    handling of environment errors are `CodeReward`'s.

    >>> import asyncio
    >>> cases = [{"input": "2 3\\n", "output": "5\\n"}]
    >>> right = "```python\\na, b = map(int, input().split())\\nprint(a + b)\\n```"
    >>> asyncio.run(AsyncCodeReward()(completions=[right], language=["python"], cases=[cases]))
    [1.0]
    """

    async def __call__(  # type: ignore[override]
        self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (), **columns: Any
    ) -> list[float | None]:
        call = super().__call__
        return await asyncio.to_thread(call, prompts, completions, **columns)


_DEFAULT = CodeReward()


def compute_score(
    data_source: Any = None,
    solution_str: str | list[str] | None = None,
    ground_truth: Any = None,
    extra_info: Any = None,
    *,
    solution_strs: list[str] | None = None,
    ground_truths: list[Any] | None = None,
    **_: Any,
) -> float | list[float | None] | None:
    """verl's custom reward entry point (`custom_reward_function.name: compute_score`).

    `ground_truth` is the row's spec (a dict or its JSON: `task`, or `language` with
    `cases` or `test`). verl calls it two ways (pinned by tests/test_reward_verl.py
    against verl 0.9.1): one completion at a time with `data_source`,
    `solution_str`, `ground_truth` and `extra_info` (reward_manager "naive"), or a
    whole batch with `data_sources`, `solution_strs`, `ground_truths` and
    `extra_infos` (reward_manager "batch"), which is scored in one sandbox batch and
    returns a list. A list given as `solution_str` is scored the same way.

    An environment error raises `SandboxEnvironmentError`: verl writes the number it
    gets into the reward tensor, so only an exception keeps a failure from training
    as a 0. Leave verl's `compute_score_timeout` unset: it scores a timed-out call
    0.0, and the sandbox already bounds every program.
    """
    if solution_strs is not None:
        solution_str, ground_truth = solution_strs, ground_truths
    if solution_str is None:
        raise TypeError("compute_score needs solution_str (or verl's batch solution_strs)")
    if isinstance(solution_str, list):
        truths = ground_truth if isinstance(ground_truth, list) else [ground_truth]
        return _DEFAULT.score(solution_str, [_json(t) for t in truths])
    [value] = _DEFAULT.score([solution_str], [_json(ground_truth)])
    return value
