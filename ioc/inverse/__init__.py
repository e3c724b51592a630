"""The inverse problem: weights from an exact optimum by inverse KKT (``inverse_kkt``) and
from measured data by maximum likelihood, with intervals and an identifiability verdict
(``estimate``).

May import: other libraries, cmtm, kinematic_trees, the top of ioc (ioc.choices, ioc._blas),
ioc.spline, ioc.optimize and ioc.files; nothing of a later group.
"""
