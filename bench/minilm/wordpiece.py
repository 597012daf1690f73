"""BERT's uncased WordPiece tokenizer (BasicTokenizer + WordpieceTokenizer) from vocab.txt.

As Hugging Face's BertTokenizer / BertNormalizer + BertPreTokenizer + WordPiece do it:
drop NUL, U+FFFD and control characters and turn whitespace into spaces; put spaces around
CJK ideographs; lower-case and strip accents (NFD, drop combining marks); split on
whitespace and punctuation (every punctuation character is a token); then greedy
longest-match-first word pieces, continuations prefixed "##", a word that cannot be covered
(or longer than 100 characters) becoming [UNK]. Encoding adds [CLS] ... [SEP] and truncates
to max_length (128, as the model's tokenizer.json does).
"""
import unicodedata

import numpy as np

MAX_LENGTH = 128
MAX_WORD_CHARS = 100


def _is_whitespace(c):
    return c in " \t\n\r" or unicodedata.category(c) == "Zs"


def _is_control(c):
    return c not in "\t\n\r" and unicodedata.category(c) in ("Cc", "Cf", "Cn", "Co")


def _is_punctuation(c):
    cp = ord(c)
    # ASCII symbols such as ^ $ ` are not Unicode punctuation but BERT splits them too.
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def _is_cjk(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def normalize(text):
    """clean text, space CJK ideographs, strip accents, lower-case."""
    out = []
    for c in text:
        if c in "\0\ufffd" or _is_control(c):
            continue
        if _is_whitespace(c):
            out.append(" ")
        elif _is_cjk(ord(c)):
            out.append(f" {c} ")
        else:
            out.append(c)
    text = unicodedata.normalize("NFD", "".join(out))
    return "".join(c for c in text if unicodedata.category(c) != "Mn").lower()


def basic_tokens(text):
    """Words and single punctuation characters of the normalized text."""
    tokens = []
    for word in normalize(text).split():
        current = []
        for c in word:
            if _is_punctuation(c):
                if current:
                    tokens.append("".join(current))
                    current = []
                tokens.append(c)
            else:
                current.append(c)
        if current:
            tokens.append("".join(current))
    return tokens


class WordPieceTokenizer:
    def __init__(self, vocab, unk="[UNK]", cls="[CLS]", sep="[SEP]", pad="[PAD]"):
        self.vocab = vocab
        for name in (unk, cls, sep, pad):
            if name not in vocab:
                raise ValueError(f"the vocabulary has no {name} token")
        self.unk_id, self.cls_id, self.sep_id, self.pad_id = (vocab[t] for t in (unk, cls, sep, pad))

    @classmethod
    def from_vocab(cls, path):
        """vocab.txt: one token per line, the id is the line number."""
        with open(path, encoding="utf-8") as f:
            tokens = [line.rstrip("\n") for line in f]
        return cls({token: i for i, token in enumerate(tokens)})

    def word_pieces(self, word):
        if len(word) > MAX_WORD_CHARS:
            return [self.unk_id]
        ids, start = [], 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    ids.append(self.vocab[piece])
                    start = end
                    break
            else:
                return [self.unk_id]
        return ids

    def encode(self, text, max_length=MAX_LENGTH):
        """[CLS] pieces [SEP] ids, the pieces truncated to max_length - 2."""
        if max_length < 2:
            raise ValueError(f"max_length {max_length}: needs room for [CLS] and [SEP]")
        ids = [i for word in basic_tokens(text) for i in self.word_pieces(word)]
        return [self.cls_id] + ids[:max_length - 2] + [self.sep_id]

    def batch(self, texts, max_length=MAX_LENGTH, pad_to=None):
        """{input_ids, attention_mask, token_type_ids}: int64 [len(texts), L], right-padded
        with [PAD] / mask 0 to the longest encoding (or pad_to)."""
        encoded = [self.encode(t, max_length) for t in texts]
        length = max(pad_to or 0, max(len(e) for e in encoded))
        ids = np.full((len(texts), length), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(texts), length), dtype=np.int64)
        for row, e in enumerate(encoded):
            ids[row, :len(e)] = e
            mask[row, :len(e)] = 1
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
