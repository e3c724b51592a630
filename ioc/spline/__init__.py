"""Clamped B-spline motions and the banded linear algebra of their coefficients: the
spline basis and its derivatives, with double-double sums (``bspline``), and the block-banded
layouts, chains and Cholesky factors of a spline problem (``banded``).

May import: numpy, scipy and the top of ioc (ioc.choices, ioc._blas); nothing of a later
group.
"""
