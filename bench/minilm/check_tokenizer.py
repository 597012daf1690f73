#!/usr/bin/env python3
"""wordpiece.py against Hugging Face `tokenizers` (a reference only, never a dependency).

Encodes every sentence of the data set, plus a few hand-picked edge cases, with both and
compares the ids (max length 128, [CLS]/[SEP]); prints the first difference and exits 1 on
any. Exit 2 when the model package, the data or `tokenizers` is missing.

Usage: check_tokenizer.py [--data DIR] [--model-dir DIR]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import minilm  # noqa: E402
import sentences  # noqa: E402
import wordpiece  # noqa: E402

EDGE_CASES = ["", "   ", "Ça m'a plu — naïve café, 10/10!!", "ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ", "日本語のテキスト",
              "tab\tnew\nline\u00a0nbsp\u200bzero-width", "x" * 150, "supercalifragilisticexpialidocious",
              "word " * 200, "emoji 🙂 and ¿qué? «quotes» $5^2 `code` ~tilde"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=sentences.DEFAULT_DIR)
    p.add_argument("--model-dir")
    args = p.parse_args(argv)
    try:
        from tokenizers import Tokenizer
        path = minilm.model_dir(args.model_dir)
        texts = [text for text, _ in sentences.load(args.data)]
    except (ImportError, minilm.ModelNotFound, sentences.DataNotFound) as e:
        print(f"check_tokenizer.py: {e}", file=sys.stderr)
        return 2
    ours = wordpiece.WordPieceTokenizer.from_vocab(os.path.join(path, "vocab.txt"))
    theirs = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
    theirs.no_padding()
    theirs.enable_truncation(wordpiece.MAX_LENGTH)
    differences = 0
    for text in texts + EDGE_CASES:
        want = theirs.encode(text).ids
        got = ours.encode(text)
        if got != want:
            if not differences:
                print(f"first difference: {text!r}\n  ours:       {got}\n  tokenizers: {want}")
            differences += 1
    total = len(texts) + len(EDGE_CASES)
    print(f"{total - differences}/{total} encodings equal ({len(texts)} sentences + {len(EDGE_CASES)} edge cases)")
    return 0 if not differences else 1


if __name__ == "__main__":
    sys.exit(main())
