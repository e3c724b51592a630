"""The one place that fixes Numba's options for every kernel of the engine.

All kernels are float64, compiled on first call and cached on disk (``cache=True``);
``fastmath`` stays off so that results are reproducible and comparisons against
Pinocchio and finite differences stay meaningful. Numba's default error model is kept;
public wrappers validate inputs and check outputs with ``np.isfinite``.
"""
import numba

jit = numba.njit(cache=True, fastmath=False, nogil=True)
