"""Honest labels for unconstrained coordinates: `log(sigma)`, `logit(p)`, `stick_breaking_inv(w)[0]`."""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

# the inverse of each bijection (constrained -> unconstrained), by NumPyro transform class
_INVERSE = {"ExpTransform": "log", "SigmoidTransform": "logit", "AffineTransform": "affine_inv",
            "SoftplusTransform": "softplus_inv", "StickBreakingTransform": "stick_breaking_inv",
            "CorrCholeskyTransform": "corr_cholesky_inv",
            "LowerCholeskyTransform": "lower_cholesky_inv", "OrderedTransform": "ordered_inv",
            "CorrMatrixCholeskyTransform": "corr_matrix_inv", "PowerTransform": "power_inv",
            "SoftplusLowerCholeskyTransform": "softplus_lower_cholesky_inv",
            "ScaledUnitLowerCholeskyTransform": "scaled_lower_cholesky_inv",
            "L1BallTransform": "l1_ball_inv", "ZeroSumTransform": "zero_sum_inv"}


def inverse_label(transform) -> Optional[str]:
    """How u = T^-1(x) reads as a function name applied to the site, e.g. "log", or
    "logit(affine_inv({}))" for a composition; None for the identity."""
    name = type(transform).__name__
    if name == "IndependentTransform":
        return inverse_label(transform.base_transform)
    if name == "IdentityTransform":
        return None
    if name == "ComposeTransform":  # x = T_n(...T_1(u)): u = T_1^-1(...T_n^-1(x))
        text = "{}"
        for part in transform.parts:
            lab = inverse_label(part)
            if lab is not None:
                text = text.format(lab if "{}" in lab else f"{lab}({{}})")
        return None if text == "{}" else text
    return _INVERSE.get(name, f"{name.removesuffix('Transform').lower()}_inv")


def apply_label(label: Optional[str], site: str) -> str:
    """The label applied to a site name: log + sigma -> log(sigma)."""
    if label is None:
        return site
    return label.format(site) if "{}" in label else f"{label}({site})"


def unconstrained_names(sites: Mapping[str, tuple], labels: Optional[Mapping] = None) -> list:
    """Flat names of unconstrained coordinates in ravel order (sorted sites, C order): the site
    name for identity transforms, the inverse transform applied to it otherwise; without labels
    every site is marked "(unconstrained)"."""
    out = []
    for site in sorted(sites):
        shape = tuple(sites[site])
        if labels is None:
            base, suffix = site, " (unconstrained)"
        else:
            base, suffix = apply_label(labels.get(site), site), ""
        if shape == ():
            out.append(base + suffix)
            continue
        for idx in np.ndindex(*shape):
            out.append(f"{base}[{','.join(str(i) for i in idx)}]{suffix}")
    return out


__all__ = ["inverse_label", "apply_label", "unconstrained_names"]
