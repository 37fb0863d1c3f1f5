"""Exports two data sets that ship inside Debian's python3-sklearn to LIBSVM.

usage: export_sklearn.py DIR

- DIR/diabetes.svm: sklearn.datasets.load_diabetes(), 442 samples x 10
  features (already centered and scaled by scikit-learn), the response the
  disease progression after one year: a regression (Lasso) with n >> p.
- DIR/breast_cancer.svm: sklearn.datasets.load_breast_cancer(), 569 samples
  x 30 features, standardized here (mean 0, standard deviation 1: the raw
  features range from 1e-3 to 4e3), labels +1 malignant / -1 benign: a
  classification (L1-logistic) with n >> p.
"""
import os
import sys

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes


def write(path, X, y, label_fmt):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for i in range(X.shape[0]):
            parts = [label_fmt(y[i])]
            parts += ["%d:%r" % (j + 1, float(v)) for j, v in enumerate(X[i]) if v != 0]
            f.write(" ".join(parts) + "\n")
    os.replace(tmp, path)


def main():
    out = sys.argv[1]
    X, y = load_diabetes(return_X_y=True)
    write(os.path.join(out, "diabetes.svm"), X, y, lambda v: "%r" % float(v))
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    # scikit-learn codes malignant as 0, benign as 1.
    write(os.path.join(out, "breast_cancer.svm"), X, y, lambda v: "-1" if v == 1 else "+1")


if __name__ == "__main__":
    main()
