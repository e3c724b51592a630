"""Sub-costs of the direct and inverse problems (cmtm_math.md §10, DESIGN.md).

Every sub-cost is c = 1/2 sum_m omega_m |y(t_m)|^2 over quadrature nodes t_m with weights
omega_m, where y is a raw time derivative of one of five stacks:

==========================  =========================  ==========================================
name                        y (raw derivatives)        needs q up to
==========================  =========================  ==========================================
joint_velocity              q'                         q'
joint_acceleration          q''                        q''
joint_jerk                  q'''                       q'''
link_velocity               nu (body twist, all links) q'
link_acceleration           nu'                        q''
link_jerk                   nu''                       q'''
joint_torque                tau (gravity included)     q''
joint_torque_rate           tau'                       q'''
base_wrench                 tau of the six virtual     q''
                            joints of a floating base
point_velocity[L@x,y,z]     p' (world frame)           q'
point_acceleration[...]     p''                        q''
point_jerk[...]             p'''                       q'''
==========================  =========================  ==========================================

General form: ``STACK:r`` is the r-th time derivative of the stack named by its order-0 term,
``joint_velocity:3`` = q'''' (snap), ``link_velocity:3`` = nu''', ``joint_torque:2`` = tau''
(torque acceleration), ``base_wrench:1`` = its rate, ``point_velocity[...]:3`` = p''''.

Subsets, in brackets after the name (before or after ``:r``), keep some rows of a stack:

* link terms keep links, ``link_velocity[link2,link3]`` (default: every link);
* joint and torque terms keep joints, ``joint_velocity[j1,j2]``, ``joint_torque_rate[j1,j2]``,
  ``joint_torque:2[j1]`` (default: every joint; but on a floating-base model the torque
  terms cover its real joints only, since the "torques" of its six virtual joints are the
  residual wrench that no muscle or motor produces);
* ``base_wrench`` (and ``base_wrench:r``; no subset) is that residual: tau of the six
  virtual joints of a floating base (``kinematic_trees.add_floating_base``), the forces
  along and torques about their axes that would have to carry the root link along its
  motion; it vanishes for a motion the body can make without external forces;
* point terms name their points, ``point_jerk[right_hand@0,-0.08,0;left_hand@0,-0.08,0]``:
  p = o_L + R_L (x, y, z) is the point with coordinates (x, y, z) (m) in the frame of link
  L (a link of the model, or a link merged into one by a fixed joint), p' its velocity in
  the world (base) frame, and y = (p_1^(r+1), p_2^(r+1), ...) over the points;
  ``point_jerk`` of a hand is Flash and Hogan's (1985) minimum hand-jerk cost,
  1/2 sum_m omega_m |p'''(t_m)|^2.

A term is evaluated in *stack space*: its value y_m (N, d) and its Jacobian
``Jy[m] = d y_m / d q_stack[m]`` of shape (N, d, K, nv) with respect to the raw stack
q, q', ..., q^(K-1) at the same sample (structured Jacobians of the engine, cmtm_math §7,
and ``cmtm.point_jacobian``); the optimization layer chains it to spline control points
(ioc.optimize.problem).
"""
import re
from dataclasses import dataclass

import numpy as np

import cmtm
from kinematic_trees import floating_base_joints

STACKS = {"joint_velocity": ("joint", 1), "link_velocity": ("link", 0),
          "joint_torque": ("torque", 0), "base_wrench": ("torque", 0),
          "point_velocity": ("point", 0)}
"""Order-0 term of each stack: (kind, derivative of the base quantity it is)."""

NAMED_TERMS = {"joint_velocity": ("joint", 1), "joint_acceleration": ("joint", 2),
               "joint_jerk": ("joint", 3), "link_velocity": ("link", 0),
               "link_acceleration": ("link", 1), "link_jerk": ("link", 2),
               "joint_torque": ("torque", 0), "joint_torque_rate": ("torque", 1)}
"""name -> (kind, r): y = q^(r) (joint), nu^(r) (link), tau^(r) (torque), the terms that
every model has and that need no subset."""

BASE_TERMS = {"base_wrench": ("torque", 0)}
"""Terms of floating-base models: tau^(r) of the six virtual joints."""

POINT_TERMS = {"point_velocity": ("point", 0), "point_acceleration": ("point", 1),
               "point_jerk": ("point", 2)}
"""Terms that name their points: y = p^(r+1) of every point, world frame."""

TERMS = {**NAMED_TERMS, **BASE_TERMS, **POINT_TERMS}

INPUT_DEPTH = {"joint": 0, "link": 1, "torque": 2, "point": 1}
"""y^(r) of a kind depends on q up to q^(r + depth) (cmtm_math §7.1)."""

_TERM_SYNTAX = re.compile(r"^(?P<base>[a-z_]+)(?::(?P<r>\d+))?(?:\[(?P<subset>[^\]]*)\])?"
                          r"(?::(?P<r_after>\d+))?$")

POINT_SYNTAX = "LINK@x,y,z, several separated by ';'"


@dataclass(frozen=True)
class CostTerm:
    """One sub-cost: y = (kind's quantity)^(derivative) at every quadrature node.

    kind : "joint" (q of ``joints``), "link" (body twists nu of ``links``), "torque" (tau of
        ``joints``) or "point" (world velocities p' of ``points``)
    derivative : r, the raw time-derivative order of that quantity
    links, joints : indices of the links or joints whose rows enter
    points : ((link index, (x, y, z)), ...): the points, in their links' frames (m)
    """
    name: str
    kind: str
    derivative: int
    links: tuple = ()
    joints: tuple = ()
    points: tuple = ()

    @property
    def top_order(self):
        """Highest raw derivative of q the term depends on."""
        return self.derivative + INPUT_DEPTH[self.kind]

    @property
    def size(self):
        """d, the number of entries of y at one node."""
        if self.kind == "link":
            return 6 * len(self.links)
        return 3 * len(self.points) if self.kind == "point" else len(self.joints)


def parse_term(spec, model):
    """A :class:`CostTerm` from a name of the table above, its general form ``STACK:r``, a
    subset (``link_velocity[link1,link3]``, ``joint_torque[j1,j2]``) or the points of a
    point term (``point_jerk[LINK@x,y,z;...]``); ValueError otherwise."""
    if not isinstance(spec, str):
        raise ValueError(f"cost: expected a cost name, got {spec!r}")
    match = _TERM_SYNTAX.match(spec.strip())
    known = ", ".join(list(TERMS) + [f"{s}:r" for s in STACKS])
    if not match or match["base"] not in TERMS or (match["r"] and match["r_after"]):
        raise ValueError(f"cost: expected one of {known}, got {spec!r}")
    base, subset, extra = match["base"], match["subset"], match["r"] or match["r_after"]
    kind, r = TERMS[base]
    if extra is not None:
        if base not in STACKS:
            raise ValueError(f"cost: the ':r' form takes a stack name ({', '.join(STACKS)}), "
                             f"got {spec!r}")
        r += int(extra)
    name = spec.strip()
    if kind == "point":
        return CostTerm(name, kind, r, points=_points(model, subset, spec))
    if kind == "link":
        links = tuple(range(model.nv)) if subset is None else \
            _subset(subset, model.link_names, "link", spec)
        return CostTerm(name, kind, r, links=links)
    return CostTerm(name, kind, r, joints=_joint_indices(model, base, subset, spec))


def _subset(text, names, what, spec):
    """Sorted indices in ``names`` (the model's link or joint names) of the comma-separated
    names of ``text``; ValueError for none or for a name not in ``names``."""
    given = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in given if name not in names]
    if not given or unknown:
        raise ValueError(f"cost {spec!r}: expected {what} names of the model "
                         f"({', '.join(names)}), got {', '.join(unknown) or 'none'}")
    return tuple(sorted({names.index(name) for name in given}))


def _joint_indices(model, base, text, spec):
    """The joints of a joint or torque term, sorted: those named in ``text``, or by
    default (``text`` None) those of the module docstring; ValueError for an empty subset
    or a name the model's joints lack, and for base_wrench with a subset or on a model
    without a floating base."""
    virtual = floating_base_joints(model)
    if base == "base_wrench":
        if not virtual:
            raise ValueError(f"cost {spec!r}: expected a model with a floating base (its six "
                             f"virtual joints carry the base wrench), got a fixed base")
        if text is not None:
            raise ValueError(f"cost {spec!r}: expected no subset (base_wrench is the six "
                             f"virtual joints' generalized forces), got [{text}]")
        return virtual
    if text is None:
        real = base.startswith("joint_torque")
        return tuple(j for j in range(model.nv) if not (real and j in virtual))
    return _subset(text, model.joint_names, "joint", spec)


def _points(model, text, spec):
    """((link index, (x, y, z)), ...) of the points ``LINK@x,y,z;...`` of a point term, in
    the frames of the links that carry them (``cmtm.api.check_points``); ValueError for no
    points, bad coordinates and links the model lacks."""
    if text is None or not text.strip():
        raise ValueError(f"cost {spec!r}: expected points [{POINT_SYNTAX}], got none")
    points = []
    for item in text.split(";"):
        link, at, xyz = item.partition("@")
        try:
            coordinates = tuple(float(x) for x in xyz.split(","))
        except ValueError:
            coordinates = ()
        if not at or len(coordinates) != 3:
            raise ValueError(f"cost {spec!r}: expected points {POINT_SYNTAX}, got "
                             f"{item.strip()!r}")
        points.append((link.strip(), coordinates))
    try:
        links, r = cmtm.api.check_points(model, points)
    except ValueError as error:
        raise ValueError(f"cost {spec!r}: {error}") from None
    return tuple((int(i), tuple(float(x) for x in xyz)) for i, xyz in zip(links, r))


def split_names(text):
    """Cost names of a comma-separated string, split at the commas outside brackets so
    that subsets such as ``link_velocity[link1,link3]`` stay whole."""
    return [name.strip() for name in re.split(r",(?![^\[]*\])", text) if name.strip()]


def parse_terms(specs, model):
    """Cost terms from a comma-separated string or a sequence of names."""
    if isinstance(specs, str):
        specs = split_names(specs)
    try:
        specs = list(specs)
    except TypeError:
        raise ValueError(f"costs: expected cost names (a comma-separated string or a "
                         f"sequence), got {specs!r}") from None
    terms = tuple(parse_term(spec, model) for spec in specs)
    if not terms:
        raise ValueError("costs: expected at least one cost name, got none")
    return terms


def stack_orders(terms):
    """K: number of raw orders q, ..., q^(K-1) the terms need together."""
    return 1 + max(term.top_order for term in terms)


def engine_order(terms):
    """Order k of the one engine call shared by the link and torque terms (None if none)."""
    dynamic = [term.derivative for term in terms if term.kind in ("link", "torque")]
    return max(dynamic) if dynamic else None


def point_order(terms):
    """Order k of the one point call shared by the point terms (None if none)."""
    orders = [term.derivative for term in terms if term.kind == "point"]
    return max(orders) if orders else None


def point_list(terms):
    """Every point of the point terms, in term order (each term's points consecutive)."""
    return [point for term in terms if term.kind == "point" for point in term.points]


def engine_quantities(terms):
    """The engine quantities of the link and torque terms: "link_velocity", "joint_torque"
    (in that order) as some term needs them."""
    kinds = {term.kind for term in terms}
    return tuple(quantity for kind, quantity in (("link", "link_velocity"),
                                                 ("torque", "joint_torque"))
                 if kind in kinds)


def engine_bytes(model, terms):
    """Bytes per sample of the engine's Jacobians that :func:`term_values` asks for."""
    k, k_p = engine_order(terms), point_order(terms)
    engine = 0 if k is None else cmtm.jacobians_nbytes(model, engine_quantities(terms), k)
    points = 0 if k_p is None else \
        8 * (k_p + 1) * 3 * len(point_list(terms)) * (k_p + 2) * model.nv
    return engine + points


def engine_units(terms):
    """The units of ``cmtm.precompile`` whose kernels :func:`term_values` runs for these
    terms with the structured Jacobians: none for joint terms alone; else those of
    ``cmtm.jacobians`` of the engine quantities, after ``cmtm.motion``'s unless the
    torque Jacobian's kernel writes the values too (:func:`_one_torque_pass`), and the
    point kernel's for point terms."""
    k = engine_order(terms)
    quantities = engine_quantities(terms)
    values = [] if k is None or _one_torque_pass(quantities) else ["motion"]
    units = [] if k is None else \
        [*values, *cmtm.compile_cache.jacobian_units(quantities, k)]
    return units + (["point motion"] if point_order(terms) is not None else [])


JACOBIAN_SOURCES = {"structured": cmtm.jacobians, "finite_differences": cmtm.reference.fd_jacobians}
"""Where the stack Jacobians come from: the structured engine (default) or central finite
differences of the engine's motion (``cmtm.reference.fd_jacobians``: for comparisons)."""
POINT_JACOBIAN_SOURCES = {"structured": cmtm.point_jacobian,
                          "finite_differences": cmtm.reference.fd_point_jacobian}
"""The same for the point terms (``cmtm.point_jacobian``, or central differences of
``cmtm.point_motion``)."""


class TermValues(list):
    """:func:`term_values`' result: one (y, Jy) per term, and ``engine``, the engine's
    Jacobians of every row and order (``cmtm.jacobians``' dict, J[s, j, i, r, b] =
    d y_i^(j) / d q_b^(r); None without link and torque terms or without Jacobians): the
    Newton Hessian's differences read the mass matrix there whatever joints the terms keep
    (``MotionProblem._curvature``)."""
    engine = None


def term_values(model, terms, q_stack, jacobians=True, source="structured", values=True):
    """Value y (N, d) and stack Jacobian Jy (N, d, K, nv) of every term at every sample,
    a :class:`TermValues` (Jy is None with ``jacobians=False``, which skips the Jacobian
    pass; ``source`` names an entry of JACOBIAN_SOURCES; with ``values=False`` the link,
    torque and point terms' y is None, which skips the engine's motion passes: the Newton
    Hessian's differences).

    q_stack : (N, K, nv) float64 raw derivatives, K = stack_orders(terms).
    One call of ``cmtm.motion`` and one of ``cmtm.jacobians`` serve all link and torque
    terms together (gravity-free link twists, torques with gravity: cmtm_math §3.3), or
    for torque terms alone one call of ``cmtm.api.torques_and_jacobian``
    (:func:`_one_torque_pass`); one of ``cmtm.point_motion`` and one of
    ``cmtm.point_jacobian`` all point terms.
    """
    N, K, nv = q_stack.shape
    k = engine_order(terms)
    motion = J = None
    if k is not None:
        quantities = engine_quantities(terms)
        with_torque = "joint_torque" in quantities
        engine_stack = _padded(q_stack, k + (3 if with_torque else 2))
        if _one_torque_pass(quantities):
            structured = jacobians and source == "structured"
            if values or structured:
                tau, J_tau = cmtm.api.torques_and_jacobian(model, engine_stack, k,
                                                           values=values, jacobian=structured)
                motion = None if tau is None else _Torques(tau)
                J = None if J_tau is None else {"joint_torque": J_tau}
        elif values:
            motion = cmtm.motion(model, engine_stack, order=k, dynamics=with_torque,
                                 world=False)
        if jacobians and J is None:
            J = JACOBIAN_SOURCES[source](model, engine_stack, quantities, order=k)
    points = _point_values(model, terms, q_stack, jacobians, source, values)
    out, start = TermValues(), 0
    out.engine = J
    for term in terms:
        if term.kind == "point":
            out.append(_point_term_value(term, K, points, start))
            start += len(term.points)
        else:
            out.append(_term_value(term, q_stack, motion, J, jacobians))
    return out


def _one_torque_pass(quantities):
    """Whether the torque terms' values come from the kernel of their Jacobian
    (``cmtm.api.torques_and_jacobian``): torque terms alone (no link term). One engine
    pass instead of two where both are wanted (:meth:`MotionProblem.evaluate`), and the
    same kernel for the values alone (``MotionProblem.cost``, the line search): the
    torques are the same bits either way, so the costs that the line search compares are
    computed alike. 200 samples, one thread, values and Jacobian / values alone: case (b)
    (order 0) 321 -> 168 us / 144 -> 86 us a call, case (c) (order 1) 600 -> 415 us /
    211 -> 182 us.

    Its torques (world frame, moments about the world origin) differ from the motion
    kernel's by rounding (at most 6e-16 of the largest at order 0, 1.3e-15 at order 1:
    200 random samples of a 3-link chain, the Panda and the floating human), and so do
    the solver's paths on bench_peers' cases b, c, panda and human (intermediate costs by
    up to 1e-7 relative, on ill-conditioned Newton systems), not their iteration counts,
    nor the floating human's of tests/test_floating_base.py (5); their final costs agree
    within 5e-16 relative (case c's last step is halved once by the line search, at
    stationarity 1e-12). Not ``cmtm.inverse_dynamics``' recursive Newton-Euler kernel at
    order 0, whose rounding (~3e-16 from the motion kernel's) turned that floating human
    from converged in 5 iterations to stalled at stationarity 2.5e-2 (a nearly singular
    Newton system)."""
    return quantities == ("joint_torque",)


@dataclass(frozen=True)
class _Torques:
    """What torque terms read of ``cmtm.motion``'s result (``tau``), when no link term
    needs the rest (:func:`_one_torque_pass`)."""
    tau: np.ndarray


def _padded(q_stack, n_orders):
    """The stack with zero derivatives appended up to ``n_orders``: a term of a lower order
    than the shared engine call does not depend on them (cmtm_math §7.1)."""
    if q_stack.shape[1] >= n_orders:
        return q_stack[:, :n_orders]
    padded = np.zeros((q_stack.shape[0], n_orders, q_stack.shape[2]))
    padded[:, :q_stack.shape[1]] = q_stack
    return padded


def _point_values(model, terms, q_stack, jacobians, source, values=True):
    """(p^(1..k+1) (N, k+1, n_points, 3) or None without ``values``, its Jacobian or None
    without ``jacobians``) of every point of the terms (:func:`point_list`) from one call of
    each, k = point_order(terms); None without point terms."""
    k = point_order(terms)
    if k is None:
        return None
    stack, points = _padded(q_stack, k + 2), point_list(terms)
    p = cmtm.point_motion(model, stack, points, order=k) if values else None
    J = POINT_JACOBIAN_SOURCES[source](model, stack, points, order=k) if jacobians else None
    return p, J


def _point_term_value(term, K, points, start):
    """y (N, 3 n) and Jy (N, 3 n, K, nv) (None without the Jacobian) of a point term whose
    n points start at ``start`` in the shared point call ``points``."""
    p, J = points
    n, r = len(term.points), term.derivative
    y = None if p is None else p[:, r, start:start + n].reshape(p.shape[0], -1)
    return y, None if J is None else _widened(J[:, r, 3 * start:3 * (start + n)], K)


def _widened(J, K):
    """Jy (N, d, K, nv): a term's Jacobian J (N, d, K_J, nv) with zero columns for the
    orders above K_J, or cut to K (a shared engine call's top orders, on which the term
    does not depend); J itself (no copy) where K_J = K."""
    if J.shape[2] == K:
        return J
    Jy = np.zeros(J.shape[:2] + (K, J.shape[3]))
    n = min(K, J.shape[2])
    Jy[:, :, :n] = J[:, :, :n]
    return Jy


def _term_value(term, q_stack, motion, jacobians, with_jacobian):
    N, K, nv = q_stack.shape
    r = term.derivative
    if term.kind == "joint":
        joints = np.asarray(term.joints)
        y = q_stack[:, r, joints]
        if not with_jacobian:
            return y, None
        Jy = np.zeros((N, len(joints), K, nv))
        Jy[:, np.arange(len(joints)), r, joints] = 1.0
        return y, Jy
    if term.kind == "link":
        rows = (6 * np.asarray(term.links)[:, None] + np.arange(6)).ravel()
        y = None if motion is None else motion.v_L[:, r][:, term.links, :].reshape(N, -1)
        if not with_jacobian:
            return y, None
        J = jacobians["link_velocity"][:, r]
        J = J[:, rows] if len(rows) < J.shape[1] else J
    else:
        y = None if motion is None else motion.tau[:, r][:, term.joints]
        if not with_jacobian:
            return y, None
        J = jacobians["joint_torque"][:, r]
        J = J if term.joints == tuple(range(J.shape[1])) else J[:, term.joints]
    return y, _widened(J, K)
