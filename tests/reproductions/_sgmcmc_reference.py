"""The sgmcmc experiments' exact numbers by a second route: the MAP by scipy, Ĵ, Î and the
sandwich from their GLM closed forms, the tuning rules from their defining equations
(Sylvester solves), and the proxy's stationary covariance from the full d^2 x d^2 Kronecker system
(not the package's vech operators or Newton solver). No prior, sampling with replacement."""
import numpy as np
import scipy.linalg
import scipy.optimize


def glm_curvature(X, y, kind, sigma=None):
    """theta_hat, per-observation curvature weights w_n (J_n = w_n x_n x_n^T), J, I, the sandwich
    covariance Sigma* = J^-1 I J^-1 / N. kind: "poisson" (log link) or "linear" (loss
    r^2 / (2 sigma^2), sigma default the OLS residual sd)."""
    N, D = X.shape
    if kind == "linear":
        theta = np.linalg.lstsq(X, y, rcond=None)[0]
        r = y - X @ theta
        sigma = np.sqrt(r @ r / (N - D)) if sigma is None else sigma
        w, score = np.full(N, 1 / sigma ** 2), r / sigma ** 2
    else:
        f = lambda t: (np.sum(np.exp(X @ t)) - y @ (X @ t)) / N  # noqa: E731
        g = lambda t: X.T @ (np.exp(X @ t) - y) / N  # noqa: E731
        h = lambda t: (X.T * np.exp(X @ t)) @ X / N  # noqa: E731
        theta = scipy.optimize.minimize(f, np.zeros(D), jac=g, hess=h, method="trust-exact",
                                        options=dict(gtol=1e-13)).x
        w = np.exp(X @ theta)
        score = y - w
    J = (X.T * w) @ X / N
    I = (X.T * score ** 2) @ X / N
    Ji = np.linalg.inv(J)
    return dict(theta=theta, w=w, J=J, I=I, X=X, N=N, target=Ji @ I @ Ji / N, sigma=sigma)


def _noise_operator(c, B):
    """S -> (mean_n J_n S J_n - J S J) / B as a d^2 x d^2 matrix on vec(S)."""
    X, w, J = c["X"], c["w"], c["J"]
    Q = np.einsum("n,na,nb,nc,nd->acbd", w ** 2, X, X, X, X).reshape(len(J) ** 2, -1) / c["N"]
    return (Q - np.kron(J, J)) / B


def stationary(c, Lam, B):
    """Sigma = F Sigma F^T + Lam C(Sigma) Lam^T, C(S) = (I + mean J_n S J_n - J S J) / B,
    F = I - Lam J, solved as one linear system in vec(Sigma)."""
    d = len(c["J"])
    F = np.eye(d) - Lam @ c["J"]
    LL = np.kron(Lam, Lam)
    A = np.eye(d * d) - np.kron(F, F) - LL @ _noise_operator(c, B)
    S = np.linalg.solve(A, LL @ (c["I"] / B).ravel()).reshape(d, d)
    return 0.5 * (S + S.T)


def tuned_lambda(c, rule, B):
    """ct: eq. 7, Lam = (Sigma* H + H Sigma*) C_hat^-1, C_hat = I / B. dq-const / dq-exact: the
    symmetric P = Lam^-1 with (H Sigma*) P + P (Sigma* H) = C + H Sigma* H, C = J / B or
    C(Sigma*) (Sigma* = F Sigma* F^T + Lam C Lam^T multiplied by P on both sides)."""
    H, S = c["J"], c["target"]
    if rule == "ct":
        return (S @ H + H @ S) @ np.linalg.inv(c["I"] / B)
    if rule == "dq-const":
        C = H / B
    else:
        d = len(H)
        C = c["I"] / B + (_noise_operator(c, B) @ S.ravel()).reshape(d, d)
    P = scipy.linalg.solve_sylvester(H @ S, S @ H, C + H @ S @ H)
    return np.linalg.inv(0.5 * (P + P.T))


def predicted_cov_err(c, rule, B):
    """||Sigma(Lam_rule) - Sigma*||_F / ||Sigma*||_F."""
    S = stationary(c, tuned_lambda(c, rule, B), B)
    return np.linalg.norm(S - c["target"]) / np.linalg.norm(c["target"])
