"""gmm_gpu (PyPI gmm-gpu 0.2.8: many small GMMs in one PyTorch batch) on the
datasets peers-gmm-gpu.R writes, for issue 33's comparison. Reads B datasets
of N observations of D variables (float64, each dataset's rows one after the
other), fits `reps` instances of each (its own k-means++ start each) with K
components, full covariance, in fp32 (its default; its fp64 path crashed on
an H100, issue 33), and prints one JSON line: seconds (after a warm-up fit),
iterations run, and each dataset's best mean log-likelihood per observation.
    python3 peers_gmm_gpu.py FILE B N D K REPS MAX_ITER TOL
"""
import json
import sys
import time

import numpy as np
import torch
from gmm_gpu.gmm import GMM


def main():
    path = sys.argv[1]
    b, n, d, k, reps, max_iter = (int(v) for v in sys.argv[2:8])
    tol = float(sys.argv[8])
    x = torch.from_numpy(np.fromfile(path, dtype=np.float64).reshape(b, n, d))
    x = x.repeat_interleave(reps, dim=0).to("cuda", dtype=torch.float32)
    GMM(n_components=k, max_iter=5, tol=tol, device="cuda", random_seed=7).fit(x[: min(len(x), 64)])
    torch.cuda.synchronize()
    gmm = GMM(n_components=k, max_iter=max_iter, tol=tol, device="cuda", random_seed=1)
    t0 = time.perf_counter()
    gmm.fit(x)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    score = gmm.score(x).double().numpy().reshape(b, reps)
    iters = gmm.convergence_iters.cpu().numpy()
    iters = np.where(iters < 0, max_iter, iters)
    print(json.dumps({
        "seconds": seconds,
        "instances": int(len(x)),
        "mean_iterations": float(iters.mean()),
        "best_per_obs": np.nanmax(score, axis=1).tolist(),
    }))


if __name__ == "__main__":
    main()
