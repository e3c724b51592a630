"""The one place that fixes Numba's options for every kernel of the engine.

All kernels are float64, compiled on first call and cached on disk (``cache=True``);
``fastmath`` stays off so that results are reproducible and comparisons against
Pinocchio and finite differences stay meaningful. Numba's default error model is kept;
public wrappers validate inputs and check outputs with ``np.isfinite``.
"""
import numba

jit = numba.njit(cache=True, fastmath=False, nogil=True)

jit_inline = numba.njit(cache=True, fastmath=False, nogil=True, inline="always")
"""The same options, inlined into the caller at Numba's IR level. The rule: a function
that calls other kernels' helpers and is called from one or two places (a kernel's
per-sample body, its passes, its pair rules) is ``jit_inline``; leaves (the small helpers
of ``cmtm.spatial`` and ``cmtm.taylor``, called from many places) stay ``jit``.

Why: Numba links the machine code of every separately compiled callee into its caller and
optimizes and emits the linked module again, so each compiled level repeats the work of
the whole call tree below it. Inlining the middle layers leaves two levels per kernel (the
kernel, then its leaves). Inlining the leaves instead costs more than it saves (each call
site is typed again: +13 s on ``cmtm.jacobian``). Measured cold compile of every public
function together: 36.3 s -> 31.4 s, identical results bit for bit; the helpers that are
shared by several rows of the Jacobian kernel (``cmtm.structured_jacobians`` rules,
``cmtm.dynamics``) stay ``jit``: inlining them at each of their call sites cost 4 s."""
