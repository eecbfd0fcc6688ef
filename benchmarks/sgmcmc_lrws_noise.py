"""Why LR+WS fails under the beta-loss (docs/sgmcmc.md, "the reversed LR+WS calibration finding").

For data set 0 of the printed and the authors' code Table 2 designs, B = 16: the trace ratio of the
LR+WS noise model (eq. 10) to the exact minibatch noise C(Sigma*) (eq. 16), and the median ratio of
the exact stationary variances under the tuned Lambda (printed and code forms) to Sigma*.
"""
import numpy as np

import inertia  # noqa: F401
from reproductions.sgmcmc import sim_linear, sim_linear_code
from inertia.sgmcmc import linear_regression, stationary, tune
from inertia.sgmcmc.offline import offline
from inertia.sgmcmc.predict import _lrws_parts


def report(design, X, y, sigma, B=16):
    for loss in ("log", "beta"):
        c = offline(linear_regression(X, y, loss=loss, sigma=sigma))
        S = c.target_cov
        A, s2, sig = _lrws_parts(c)
        C_lrws = (A @ S @ A + np.trace(A @ S) * A + s2 * A) / sig ** 4 / B
        ratio = np.trace(C_lrws) / np.trace(c.noise_cov(S, B))
        var = {m: np.median(np.diag(stationary(c, tune(c, method=m, batch_size=B,
                                                       check=False).Lambda,
                                               batch_size=B).cov) / np.diag(S))
               for m in ("lr-ws", "lr-ws-code")}
        print(f"{design:15s} {loss:4s} sigma={sig:.3g}  tr C_lrws / tr C = {ratio:.3g}  "
              f"median var ratio: lr-ws {var['lr-ws']:.3g}, lr-ws-code {var['lr-ws-code']:.3g}")


if __name__ == "__main__":
    X, y, _ = sim_linear_code(0, 20, 5000)
    report("code design", X, y, 1.0)
    X, y, _ = sim_linear(0, 50, 5000)
    report("printed design", X, y, None)
