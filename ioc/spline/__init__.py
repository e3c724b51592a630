"""Clamped B-spline motions and the banded linear algebra of their coefficients: the
spline basis and its derivatives, with double-double sums (``bspline``), the block-banded
layouts, chains and Cholesky factors of a spline problem (``banded``), and the smoothing
spline fit of sampled joint values (``smoothing``).

May import: numpy, scipy, cmtm (the memory budget) and the top of ioc (ioc.choices,
ioc._blas); nothing of a later group.
"""
