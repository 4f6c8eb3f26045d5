"""scikit-learn's GaussianMixture in a loop over the datasets peers-sklearn.R
writes, spread over processes (issue 33: "ahead of scikit-learn in a loop on
16 cores"). Reads B datasets of N observations of D variables (float64, each
dataset's rows one after the other), fits each with K components, full
covariance, `n_init` starts (`init` "kmeans", scikit-learn's default, or
"random_from_data"), `max_iter` and `tol` as given, one BLAS thread per
process, and prints one JSON line: seconds, the EM iterations run (summed
over every start: scikit-learn keeps only the best start's count, so each
start is fitted on its own, as n_init would, and the best kept), and each
dataset's best mean log-likelihood per observation.
    python3 peers_sklearn.py FILE B N D K N_INIT MAX_ITER TOL INIT JOBS
"""
import json
import os
import sys
import time
import warnings

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import numpy as np  # noqa: E402
from joblib import Parallel, delayed  # noqa: E402
from sklearn.mixture import GaussianMixture  # noqa: E402


def fit_one(x, k, n_init, max_iter, tol, init, seed):
    warnings.filterwarnings("ignore")  # ConvergenceWarning where max_iter ends a start, as asked
    best, iters = -np.inf, 0
    for s in range(n_init):
        gm = GaussianMixture(n_components=k, covariance_type="full", max_iter=max_iter, tol=tol,
                             init_params=init, random_state=seed * 1000 + s)
        gm.fit(x)
        iters += gm.n_iter_
        best = max(best, gm.score(x))
    return best, iters


def main():
    path = sys.argv[1]
    b, n, d, k, n_init, max_iter = (int(v) for v in sys.argv[2:8])
    tol = float(sys.argv[8])
    init = sys.argv[9]
    jobs = int(sys.argv[10])
    x = np.fromfile(path, dtype=np.float64).reshape(b, n, d)
    with Parallel(n_jobs=jobs) as par:
        par(delayed(fit_one)(x[i], k, 1, 2, tol, init, i) for i in range(min(b, jobs)))
        t0 = time.perf_counter()
        out = par(delayed(fit_one)(x[i], k, n_init, max_iter, tol, init, i) for i in range(b))
        seconds = time.perf_counter() - t0
    print(json.dumps({
        "seconds": seconds,
        "iterations": int(sum(o[1] for o in out)),
        "best_per_obs": [float(o[0]) for o in out],
    }))


if __name__ == "__main__":
    main()
