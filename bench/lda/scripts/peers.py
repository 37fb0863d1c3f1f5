#!/usr/bin/env python3
"""Fits a peer's LDA on a UCI docword file, for bench/lda's peers experiment,
and writes its topics for bench/lda's evaluator:

    peers.py --system sklearn|gensim --train F --words W --topics K --seed S --passes P --out DIR

- sklearn: sklearn.decomposition.LatentDirichletAllocation, online variational
  Bayes (Hoffman et al. 2010), its defaults (α = η = 1/K, batches of 128,
  learning_offset 10, decay 0.7) but P epochs (max_iter) and n_jobs=2; the
  topics are its λ normalized (the posterior mean of φ).
- gensim: gensim.models.LdaMulticore (online variational Bayes, 1 worker
  process beside the master: two cores), α = η = 1/K (its defaults), P passes,
  chunks of 2,000 documents, 50 E-step iterations; the topics are
  get_topics(); α is the model's.

Only the fit is timed (time.perf_counter around it), not reading the file nor
writing the topics. Writes DIR/phi.f64 (K×W float64, little-endian, row k =
topic k, each row renormalized to sum to 1 in float64), DIR/alpha.txt (K
lines) and DIR/result.json {"system", "topics", "passes", "fit_s"}.
"""
import argparse
import json
import os
import time

import numpy as np
import scipy.sparse as sp


def read_docword(path, words):
    with open(path) as f:
        d, w, nnz = (int(f.readline()) for _ in range(3))
        if w != words:
            raise SystemExit(f"{path}: W = {w}, want {words}")
        data = np.loadtxt(f, dtype=np.int64, ndmin=2)
    return sp.csr_matrix((data[:, 2], (data[:, 0] - 1, data[:, 1] - 1)), shape=(d, w), dtype=np.float64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--system", choices=["sklearn", "gensim"], required=True)
    ap.add_argument("--train", required=True)
    ap.add_argument("--words", type=int, required=True)
    ap.add_argument("--topics", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--passes", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    x = read_docword(a.train, a.words)
    k = a.topics
    if a.system == "sklearn":
        from sklearn.decomposition import LatentDirichletAllocation
        m = LatentDirichletAllocation(n_components=k, learning_method="online", max_iter=a.passes,
                                      random_state=a.seed, n_jobs=a.jobs)
        t0 = time.perf_counter()
        m.fit(x)
        fit = time.perf_counter() - t0
        phi = m.components_ / m.components_.sum(axis=1, keepdims=True)
        alpha = np.full(k, m.doc_topic_prior_)
    else:
        import logging
        from gensim.models import LdaMulticore
        logging.disable(logging.CRITICAL)
        corpus = [list(zip(row.indices.tolist(), row.data.astype(int).tolist())) for row in x]
        t0 = time.perf_counter()
        m = LdaMulticore(corpus, num_topics=k, id2word={i: str(i) for i in range(a.words)}, workers=1,
                         passes=a.passes, chunksize=2000, iterations=50, random_state=a.seed)
        fit = time.perf_counter() - t0
        phi = m.get_topics().astype(np.float64)
        alpha = np.asarray(m.alpha, dtype=np.float64)
    phi /= phi.sum(axis=1, keepdims=True)
    os.makedirs(a.out, exist_ok=True)
    phi.astype("<f8").tofile(os.path.join(a.out, "phi.f64"))
    with open(os.path.join(a.out, "alpha.txt"), "w") as f:
        f.write("".join("%.17g\n" % v for v in alpha))
    with open(os.path.join(a.out, "result.json"), "w") as f:
        json.dump({"system": a.system, "topics": k, "passes": a.passes, "fit_s": fit}, f)
    print(json.dumps({"system": a.system, "topics": k, "passes": a.passes, "fit_s": round(fit, 3)}))


if __name__ == "__main__":
    main()
