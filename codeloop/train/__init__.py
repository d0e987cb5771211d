"""LoRA fine-tuning on verified rows: validate, encode, train, resume, pause.

Light parts (dataset checks, encoding, scheduling) import nothing heavy; the
training itself (`codeloop.train.trainer.run`) imports torch and TRL when called.
"""

from codeloop.train.dataset import Dataset, check_counts, load_dataset
from codeloop.train.encode import IGNORE_INDEX, Encoded, Example, encode_rows

__all__ = [
    "IGNORE_INDEX",
    "Dataset",
    "Encoded",
    "Example",
    "check_counts",
    "encode_rows",
    "load_dataset",
]
