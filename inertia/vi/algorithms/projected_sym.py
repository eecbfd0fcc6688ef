"""Projected accelerated scheme in symmetric-root coordinates (Algorithm 3, Lemma C.14) and its twin.

y_k = (s x_k + v_k)/(s + 1);  x_{k+1} = P(y_k - eta g_k);
v_{k+1} = P((1 - 1/s) v_k + y_k/s - g_k/(alpha s)), g_k a FULL grad F estimate (STL, Price-STL).
Plain: x_{k+1} = P(x_k - eta G(x_k)). P clips the spectrum of C to [lower, upper] (spec §2.4).
"""
from __future__ import annotations

from ..family import covariance, project_spectrum
from .base import Kernel, VIInfo, VIState, finite


def build(target, estimator, *, eta, s, alpha, lower, upper, accelerated, batch_size,
          options=None) -> Kernel:
    """Algorithm 3 (accelerated) or projected SGD (plain) with spectrum bounds [lower, upper]."""
    options = options or {}

    def proj(m, C):
        return m, project_spectrum(C, lower, upper)

    def init(m0, C0):
        m, C = proj(m0, C0)
        return VIState(m, C, m, C)

    def step_acc(state, key):
        ym = (s * state.m + state.aux_m) / (s + 1.0)
        yC = (s * state.A + state.aux_A) / (s + 1.0)
        gm, gC = estimator.estimate(target, key, ym, yC, batch_size, **options)
        m, C = proj(ym - eta * gm, yC - eta * gC)
        a = 1.0 / s
        vm, vC = proj((1 - a) * state.aux_m + a * ym - gm / (alpha * s),
                      (1 - a) * state.aux_A + a * yC - gC / (alpha * s))
        return VIState(m, C, vm, vC), VIInfo(finite(m, C, vm, vC))

    def step_plain(state, key):
        gm, gC = estimator.estimate(target, key, state.m, state.A, batch_size, **options)
        m, C = proj(state.m - eta * gm, state.A - eta * gC)
        return VIState(m, C, m, C), VIInfo(finite(m, C))

    def gaussian(state):
        return state.m, covariance(state.A, "sym")

    return Kernel(init, step_acc if accelerated else step_plain, gaussian, "sym")
