"""The option vocabularies that the command line offers and the library checks, in a module
that imports nothing: the ``cmtm`` parser is built from them at every start, before any
solver module (scipy, joblib) is loaded."""

INTEGRATION_RULES = ("samples", "gauss")
"""Cost quadrature of ``ioc.optimize.problem.MotionProblem``: the sample grid or Gauss-Legendre."""

CONSTRAINT_MODES = ("exact", "penalty")
"""Boundary conditions of ``ioc.optimize.problem.MotionProblem``: fixed exactly or as penalties."""

BOUNDARY_MODES = ("rest", "data")
"""End conditions of ``ioc.optimize.problem.MotionProblem``: rest (q^(1..R) = 0) or given
derivatives (the data's)."""

BACKENDS = ("loky", "dask")
"""joblib backends of a batch of trials (``ioc.commands.batch``)."""

ESTIMATORS = ("kkt", "data")
"""Weight estimators of ``ioc.commands.batch``: inverse KKT, or maximum likelihood on the data."""

PAGE_FRAMES = 200
"""Instants of a motion page (``ioc.show.view``) at most: data samples beyond are thinned."""
