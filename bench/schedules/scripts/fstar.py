"""F* for bench/schedules: scikit-learn's Lasso objective at lambda = RATIO * lambda_max.

usage: fstar.py DATA P RATIO INTERCEPT(0|1) TOL

Reads the LIBSVM file DATA with sklearn.datasets.load_svmlight_file (dense
when more than half its entries are non-zero), sets lambda_max =
||X~' y~||_inf / n (X and y centered with an intercept, as strads does;
X~' y~ = X' (y - mean y)), fits Lasso(alpha=lambda, fit_intercept=INTERCEPT,
tol=TOL, max_iter=1e6) and prints, as "key value" lines, lambda_max, lambda,
the objective (1/2n)||y - Xw - b||^2 + lambda ||w||_1 with every digit, its
duality gap (so that objective - gap <= the optimum), the number of
non-zeros, sklearn's iterations and duality gap (in its own scaling), and
the fit time.
"""
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso


def main():
    data, p, ratio, intercept, tol = sys.argv[1:6]
    intercept = intercept == "1"
    X, y = load_svmlight_file(data, n_features=int(p), dtype=np.float64)
    n = X.shape[0]
    if X.nnz > 0.5 * n * int(p):
        X = X.toarray()
    yc = y - y.mean() if intercept else y
    lambda_max = np.max(np.abs(X.T @ yc)) / n
    lam = float(ratio) * lambda_max
    model = Lasso(alpha=lam, fit_intercept=intercept, tol=float(tol), max_iter=1000000)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(X, y)
    fit = time.perf_counter() - t0
    r = y - X @ model.coef_ - (model.intercept_ if intercept else 0.0)
    obj = r @ r / (2 * n) + lam * np.sum(np.abs(model.coef_))
    # A certificate of our own: the duality gap at the dual point nu = s*r~
    # (r~ the residual, centered with an intercept), s = min(1, n*lam /
    # ||X~' r~||_inf); X~' r~ = X' r~ since r~ sums to zero.
    rc = r - r.mean() if intercept else r
    s = min(1.0, n * lam / np.max(np.abs(X.T @ rc)))
    dual = (yc @ yc - (yc - s * rc) @ (yc - s * rc)) / (2 * n)
    print("lambda_max %r" % float(lambda_max))
    print("lambda %r" % lam)
    print("objective %r" % float(obj))
    print("gap %r" % float(obj - dual))
    print("nnz %d" % np.count_nonzero(model.coef_))
    print("n_iter %d" % model.n_iter_)
    print("dual_gap %r" % float(model.dual_gap_))
    print("fit_s %.6f" % fit)
    print("converged %d" % int(not any(issubclass(w.category, ConvergenceWarning) for w in caught)))


if __name__ == "__main__":
    main()
