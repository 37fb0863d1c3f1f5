#!/usr/bin/env python3
"""Builds the real corpus of bench/lda: the paragraphs of the Linux kernel's
documentation as Debian packages it (linux-doc-6.1: the reStructuredText and
plain-text sources under /usr/share/doc/linux-doc-6.1/Documentation, one .gz
file each), as UCI bag-of-words files.

    apt-get install linux-doc-6.1
    python3 bench/lda/scripts/corpus.py --out /tmp/kdoc

Every file (in path order) is cut into paragraphs at blank lines; a paragraph
is lower-cased and split into runs of letters (as strads' --text does); words
of scikit-learn's English stop-word list and words shorter than 3 letters are
dropped, and so are paragraphs left with fewer than 20 words. The vocabulary
is the words found in at least 10 of those paragraphs and in at most 10% of
them; a paragraph with fewer than 10 vocabulary words is dropped. Then every
10th paragraph (the 10th, 20th, ...) is a test document, the others training
documents. Writes OUT/train.docword.txt, OUT/test.docword.txt (UCI: D, W,
NNZ, then "doc word count", 1-based) and OUT/vocab.txt, and prints the sizes.
Standard library only, apart from the stop-word list.
"""
import argparse
import collections
import gzip
import os
import re

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

WORD = re.compile(r"[^\W\d_]+")


def paragraphs(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(".gz"):
                continue
            with gzip.open(os.path.join(dirpath, name), "rt", encoding="utf-8", errors="replace") as f:
                text = f.read()
            for para in re.split(r"\n[ \t]*\n", text):
                words = [w for w in WORD.findall(para.lower()) if len(w) >= 3 and w not in ENGLISH_STOP_WORDS]
                if len(words) >= 20:
                    yield words


def write_docword(path, docs, index):
    entries = []
    for d, words in enumerate(docs):
        counts = collections.Counter(index[w] for w in words if w in index)
        for w in sorted(counts):
            entries.append((d + 1, w + 1, counts[w]))
    with open(path, "w") as f:
        f.write(f"{len(docs)}\n{len(index)}\n{len(entries)}\n")
        for e in entries:
            f.write("%d %d %d\n" % e)
    return sum(c for _, _, c in entries)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default="/usr/share/doc/linux-doc-6.1/Documentation")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    docs = list(paragraphs(a.root))
    df = collections.Counter()
    for words in docs:
        df.update(set(words))
    vocab = sorted(w for w, n in df.items() if 10 <= n <= 0.1 * len(docs))
    index = {w: i for i, w in enumerate(vocab)}
    docs = [d for d in docs if sum(w in index for w in d) >= 10]
    test = docs[9::10]
    train = [d for i, d in enumerate(docs) if i % 10 != 9]
    os.makedirs(a.out, exist_ok=True)
    n_train = write_docword(os.path.join(a.out, "train.docword.txt"), train, index)
    n_test = write_docword(os.path.join(a.out, "test.docword.txt"), test, index)
    with open(os.path.join(a.out, "vocab.txt"), "w") as f:
        f.write("".join(w + "\n" for w in vocab))
    print(f"{len(train)} training documents ({n_train} tokens), {len(test)} test documents ({n_test} tokens), {len(vocab)} words")


if __name__ == "__main__":
    main()
