"""Running the strads command, and what every estimator shares."""

import inspect
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import scipy.sparse as sp


class StradsError(RuntimeError):
    """A strads job that failed: its exit status and what it said."""

    def __init__(self, args, status, stderr):
        self.status = status
        self.stderr = stderr
        last = stderr.strip().splitlines()[-1] if stderr.strip() else "no message"
        super().__init__(f"strads {' '.join(args[:1])} exited with status {status}: {last}")


def binary():
    """Return the path of the strads command: $STRADS_BIN, or strads on PATH."""
    path = os.environ.get("STRADS_BIN") or shutil.which("strads")
    if not path:
        raise FileNotFoundError(
            "no strads command: go install ./cmd/strads (and put $(go env GOPATH)/bin on PATH), or set STRADS_BIN")
    return path


def run(args, verbose=False, nats=None):
    """Run strads with args; raise StradsError unless it exits 0.

    With verbose, its progress lines (stderr) stream to this process's
    stderr as they come; its stdout (the result) is returned either way.
    """
    args = [str(a) for a in args]
    if nats:
        args += ["--nats", nats]
    cmd = [binary()] + args
    if verbose:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = []
        for line in proc.stderr:
            sys.stderr.write(line)
            lines.append(line)
        out = proc.stdout.read()
        status = proc.wait()
        err = "".join(lines)
    else:
        done = subprocess.run(cmd, capture_output=True, text=True)
        out, err, status = done.stdout, done.stderr, done.returncode
    if status != 0:
        raise StradsError(args, status, err)
    return out


class Workdir:
    """A temporary directory for a job's input and output files."""

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="strads-")
        return self

    def path(self, name):
        return os.path.join(self.dir, name)

    def __exit__(self, *exc):
        shutil.rmtree(self.dir, ignore_errors=True)


def check_X(X):
    """Return X as a CSR matrix of float64 with finite values. The messages
    are scikit-learn's, which its estimator checks look for."""
    if not sp.issparse(X):
        X = np.asarray(X)
    if np.iscomplexobj(X):
        raise ValueError("Complex data not supported")
    if X.ndim != 2:
        raise ValueError(f"Expected 2D array, got {X.ndim}D array instead. Reshape your data")
    if X.shape[0] == 0:
        raise ValueError(f"Found array with 0 sample(s) (shape={X.shape}) while a minimum of 1 is required.")
    if X.shape[1] == 0:
        raise ValueError(f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
    X = sp.csr_matrix(X, dtype=np.float64)
    if not np.all(np.isfinite(X.data)):
        raise ValueError("X holds NaN or infinite values")
    return X


def write_libsvm(path, X, y):
    """Write rows of X with labels y as a LIBSVM file (1-based indices)."""
    X = check_X(X)
    y = np.asarray(y, dtype=np.float64).ravel()
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows and y {y.shape[0]} labels")
    if not np.all(np.isfinite(y)):
        raise ValueError("y holds NaN or infinite values")
    X.sort_indices()
    with open(path, "w") as f:
        for i in range(X.shape[0]):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            cells = " ".join(f"{j + 1}:{v!r}" for j, v in zip(X.indices[lo:hi], X.data[lo:hi]) if v != 0)
            f.write(f"{y[i]!r} {cells}\n")


def metric(stdout, name):
    """Return the number after name in a strads result line, or NaN."""
    for line in stdout.splitlines():
        fields = line.split()
        for k, f in enumerate(fields[:-1]):
            if f == name:
                try:
                    return float(fields[k + 1])
                except ValueError:
                    pass
    return float("nan")


class Estimator:
    """get_params and set_params as scikit-learn's BaseEstimator: the
    parameters are the arguments of __init__, kept as given."""

    @classmethod
    def _param_names(cls):
        sig = inspect.signature(cls.__init__)
        return sorted(p for p in sig.parameters if p != "self")

    def get_params(self, deep=True):
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        valid = self._param_names()
        for k, v in params.items():
            if k not in valid:
                raise ValueError(f"invalid parameter {k!r} for {type(self).__name__}; valid: {valid}")
            setattr(self, k, v)
        return self

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _check_fitted(self, attr):
        if not hasattr(self, attr):
            raise AttributeError(f"this {type(self).__name__} is not fitted yet: call fit first")
