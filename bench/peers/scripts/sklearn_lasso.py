"""One whole scikit-learn Lasso job, run by bench/peers.

usage: sklearn_lasso.py DATA P LAMBDA INTERCEPT(0|1) TOL MAX_ITER OUT

Reads the LIBSVM file DATA with sklearn.datasets.load_svmlight_file (as a
dense array when more than half its entries are non-zero), fits
Lasso(alpha=LAMBDA, fit_intercept=INTERCEPT, tol=TOL, max_iter=MAX_ITER),
whose objective (1/2n)||y - Xw - b||^2 + alpha*||w||_1 is strads' one, and
writes the coefficients to OUT as CSV index,value (1-based; index 0 is the
intercept) with every digit. It prints its own timings as "key value" lines.
"""
import sys
import time

t_start = time.perf_counter()
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import load_svmlight_file  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import Lasso  # noqa: E402


def main():
    data, p, lam, intercept, tol, max_iter, out = sys.argv[1:8]
    t_import = time.perf_counter()
    X, y = load_svmlight_file(data, n_features=int(p), dtype=np.float64)
    n = X.shape[0]
    dense = X.nnz > 0.5 * n * int(p)
    if dense:
        X = X.toarray()
    t_load = time.perf_counter()
    model = Lasso(alpha=float(lam), fit_intercept=intercept == "1", tol=float(tol), max_iter=int(max_iter))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(X, y)
    t_fit = time.perf_counter()
    with open(out, "w") as f:
        f.write("index,value\n")
        if intercept == "1":
            f.write("0,%r\n" % float(model.intercept_))
        for j in np.flatnonzero(model.coef_):
            f.write("%d,%r\n" % (j + 1, float(model.coef_[j])))
    t_write = time.perf_counter()
    print("import_s %.6f" % (t_import - t_start))
    print("load_s %.6f" % (t_load - t_import))
    print("fit_s %.6f" % (t_fit - t_load))
    print("write_s %.6f" % (t_write - t_fit))
    print("dense %d" % int(dense))
    print("n_iter %d" % model.n_iter_)
    print("dual_gap %r" % float(model.dual_gap_))
    print("converged %d" % int(not any(issubclass(w.category, ConvergenceWarning) for w in caught)))


if __name__ == "__main__":
    main()
