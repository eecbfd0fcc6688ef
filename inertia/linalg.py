"""Dense linear algebra shared by the targets and the estimators."""
from __future__ import annotations

import jax.numpy as jnp


def tril_blocks(d: int) -> int:
    """Column blocks `tril_product` uses: 1 (a plain product) below d = 256, where slicing does
    not pay, 4 below d = 2048, then 8 (measured on a 2-core CPU, docs/benchmarks/speed.md)."""
    return 1 if d < 256 else 4 if d < 2048 else 8


def tril_product(block, d: int, dtype, num_blocks=None):
    """low(A L) for lower-triangular L from column blocks, block(s, e) = rows s: of columns s:e
    of A L = A[s:, s:] @ L[s:, s:e]: about (2/3 + 1/n) d^3 flops with n blocks instead of 2 d^3."""
    n = tril_blocks(d) if num_blocks is None else num_blocks
    if n <= 1:
        return jnp.tril(block(0, d))
    edges = [round(i * d / n) for i in range(n + 1)]
    out = jnp.zeros((d, d), dtype)
    for s, e in zip(edges[:-1], edges[1:]):
        out = out.at[s:, s:e].set(block(s, e))
    return jnp.tril(out)
