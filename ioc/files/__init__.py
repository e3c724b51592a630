"""Files and formats: the models named on the command line (``models``: built-in names,
URDF paths, the default start and goal), measured motions read and fitted with splines
(``data``), a solved motion's files (``results``: result.json, trajectory.csv, motion.npz,
atomic writes) and estimated weights (``weights_io``: weights.json, summary.csv).

May import: other libraries, cmtm, kinematic_trees, the top of ioc (ioc.choices, ioc._blas),
ioc.spline and ioc.optimize; nothing of a later group.
"""
