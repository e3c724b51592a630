"""The ``cmtm`` command line: its parser and commands (``cli``), the syntax of their
options (``options``), batches of trials on joblib or Dask (``batch``), the paper's demo
(``demo``), the files of an optimized motion (``outputs``) and the engine's compile and
Jacobian check (``engine``) that both use, and one-line messages (``messages``).

May import: other libraries, cmtm, kinematic_trees, the top of ioc (ioc.choices, ioc._blas),
ioc.spline, ioc.optimize, ioc.files, ioc.inverse and ioc.show; nothing of a later group.
"""
