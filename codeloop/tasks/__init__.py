"""Tasks: the schema, sources, pool batches and family-disjoint splits.

Layout: `schema` (Task, Case, Problem), `curriculum/` (the built-in families),
`sources/` (humaneval, humaneval-x, hf, jsonl adapters behind one interface),
`splits` (family -> split, pool integrity), `checks` (a program's sandbox check
against a task's tests), `validate` (references run in the sandbox), `pool`
(batches on disk with manifests), `order` (balanced order), `cli` (`codeloop data ...`).
"""

from codeloop.tasks.order import balanced_order
from codeloop.tasks.pool import Batch, load_pool, pool_tasks, prepare_batch, read_batch
from codeloop.tasks.schema import Case, FunctionSpec, Problem, Program, Provenance, Task
from codeloop.tasks.splits import assign_split, check_pool

__all__ = [
    "Batch",
    "Case",
    "FunctionSpec",
    "Problem",
    "Program",
    "Provenance",
    "Task",
    "assign_split",
    "balanced_order",
    "check_pool",
    "load_pool",
    "pool_tasks",
    "prepare_batch",
    "read_batch",
]
