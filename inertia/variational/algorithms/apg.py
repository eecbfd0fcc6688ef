"""Accelerated proximal / projected gradient in (m, A): Algorithms 1, 2 and 4 and their plain twins.

x_{k+1} = T(y_k, G(y_k)),  y_{k+1} = x_{k+1} + rho (x_{k+1} - x_k)   (rho = 0: plain).
T is the entropy prox (Alg. 1), the norm-constrained prox (Alg. 2), or the projection onto K_L
after adding the psi' entropy gradient (Alg. 4).
"""
from __future__ import annotations

import jax.numpy as jnp

from ..family import covariance, low, project_KL, prox_entropy, prox_norm_constrained, psi_prime
from .base import Kernel, VIInfo, VIState, finite


def entropy_prox_update(eta, coords):
    """T(y, g) = (y_m - eta g_m, prox_{eta h}(y_A - eta g_A)) (Algorithm 1, DGG-Prox)."""
    def update(m, A, gm, gA):
        return m - eta * gm, prox_entropy(A - eta * gA, eta, coords)

    return update


def norm_prox_update(eta, radius):
    """T with the norm-constrained Cholesky prox, radius sqrt(d/alpha) (Algorithm 2)."""
    def update(m, L, gm, gL):
        return m - eta * gm, prox_norm_constrained(L - eta * gL, eta, radius)

    return update


def projected_chol_update(eta, radius, tau0):
    """T(y, g) = P_{K_L}(y - eta (g + (0, diag psi'(diag L^y)))) (Algorithm 4)."""
    def update(m, L, gm, gL):
        ent = jnp.diag(psi_prime(jnp.diag(L), tau0))
        return m - eta * gm, project_KL(L - eta * (gL + ent), radius, tau0)

    return update


def build(target, estimator, update, *, rho, batch_size, options=None) -> Kernel:
    """APG kernel with momentum rho for an energy estimator and an update map T."""
    options = options or {}
    coords = estimator.coords

    def init(m0, A0):
        return VIState(m0, A0, m0, A0)

    def step(state, key):
        ym, yA = state.aux_m, state.aux_A
        gm, gA = estimator.estimate(target, key, ym, yA, batch_size, **options)
        m, A = update(ym, yA, gm, project_grad(gA))
        new = VIState(m, A, m + rho * (m - state.m), A + rho * (A - state.A))
        return new, VIInfo(finite(m, A))

    def project_grad(gA):
        return low(gA) if coords == "chol" else gA

    def gaussian(state):
        return state.m, covariance(state.A, coords)

    return Kernel(init, step, gaussian, coords)
