"""Pinocchio as a test reference: build its models from ours and call its algorithms.

Pinocchio (4.x) is LINEAR-FIRST (motions ``[v; omega]``, forces ``[f; n]``); every array
returned here is ANGULAR-FIRST like the project (``[omega; v]``, ``[n; f]``).

Joint order. A model from ``to_pinocchio`` has Pinocchio joint ``i + 1`` = our joint
``i`` (Pinocchio's joint 0 is the fixed "universe"), so no permutation is needed. A
model parsed from a URDF by Pinocchio may order its joints differently; then
``perm[i]`` is the Pinocchio q index (= v index, all joints have one DoF) of our joint
``i``, and every helper below takes ``perm`` to accept inputs and return outputs in our
order: ``q_pin[perm] = q``, ``tau = tau_pin[perm]``, ``M = M_pin[perm][:, perm]``.

Pinocchio's ``crba`` and the ``dtau_da`` of ``computeRNEADerivatives`` fill only the
upper triangle: the helpers symmetrize. Both algorithms (and others) silently return
wrong results unless joints are added in depth-first order, which ``to_pinocchio``
guarantees because our joints are in depth-first pre-order.
"""
import numpy as np
import pinocchio

from kinematic_trees.joint_types import JOINT_REVOLUTE

GRAVITY = np.array([0.0, 0.0, -9.81])


def to_pinocchio(model):
    """A ``pinocchio.Model`` with the same kinematics, inertias and gravity as ``model``.

    model : kinematic_trees.CompiledTree. Joint i of ours becomes Pinocchio joint i + 1
    (RevoluteUnaligned or PrismaticUnaligned about ``model.axis[i]``, exact for any unit
    axis), placed at SE3(placement_R[i], placement_p[i]) in its parent joint's frame and
    carrying the body Inertia(mass, com, inertia_com) in its own frame.
    """
    pin_model = pinocchio.Model()
    pin_model.gravity = pinocchio.Motion(np.asarray(model.gravity, dtype=np.float64), np.zeros(3))
    for i in range(len(model.parent)):
        axis = np.asarray(model.axis[i], dtype=np.float64)
        if model.joint_type[i] == JOINT_REVOLUTE:
            joint = pinocchio.JointModelRevoluteUnaligned(axis)
        else:
            joint = pinocchio.JointModelPrismaticUnaligned(axis)
        placement = pinocchio.SE3(np.asarray(model.placement_R[i], dtype=np.float64),
                                  np.asarray(model.placement_p[i], dtype=np.float64))
        joint_id = pin_model.addJoint(int(model.parent[i]) + 1, joint, placement,
                                      model.joint_names[i])
        inertia = pinocchio.Inertia(float(model.mass[i]),
                                    np.asarray(model.com[i], dtype=np.float64),
                                    np.asarray(model.inertia_com[i], dtype=np.float64))
        pin_model.appendBodyToJoint(joint_id, inertia, pinocchio.SE3.Identity())
    return pin_model


def pinocchio_from_urdf(path, joint_names, lock=None):
    """Pinocchio's own parse of a URDF, with joints locked, and the joint permutation.

    path : str or Path of the URDF (fixed base). joint_names : sequence of str, our joint
    order (pass ``model.joint_names``; taking the names keeps this independent of our
    loader). lock : dict joint name -> position (rad or m) of the joints to lock, or None.
    Mimic tags are ignored (Pinocchio's default), so a mimic joint is an ordinary joint
    and must be locked explicitly if it is locked in our model.

    Returns (pin_model, perm): the reduced model (``buildReducedModel`` merges each
    locked joint's subtree into its parent body) with gravity (0, 0, -9.81), and perm
    (nv,) int64 with ``perm[i]`` the Pinocchio q index of ``joint_names[i]``.
    """
    full = pinocchio.buildModelFromUrdf(str(path))
    lock = dict(lock or {})
    missing = [name for name in lock if not full.existJointName(name)]
    if missing:
        raise ValueError(f"lock: joints {missing} are not in {path}")
    q_ref = pinocchio.neutral(full)
    for name, position in lock.items():
        q_ref[full.joints[full.getJointId(name)].idx_q] = position
    pin_model = pinocchio.buildReducedModel(full, [full.getJointId(name) for name in lock], q_ref)
    pin_model.gravity = pinocchio.Motion(GRAVITY, np.zeros(3))
    if pin_model.nq != pin_model.nv or sorted(joint_names) != sorted(pin_model.names[1:]):
        raise ValueError(f"joint_names: expected the {pin_model.nv} one-DoF joints "
                         f"{list(pin_model.names[1:])}, got {list(joint_names)}")
    perm = np.array([pin_model.joints[pin_model.getJointId(name)].idx_q for name in joint_names],
                    dtype=np.int64)
    return pin_model, perm


def floating_from_urdf(path, axes, joint_names, composite=True, gravity=GRAVITY):
    """Pinocchio's parse of a URDF whose root link moves like our floating base.

    The six coordinates of ``kinematic_trees.add_floating_base`` (axes of the rotations,
    e.g. "zxy") are Pinocchio joints PX, PY, PZ, R<a1>, R<a2>, R<a3>: with ``composite``
    one ``JointModelComposite`` (the URDF parsed under it as root joint); otherwise six
    separate joints named ``joint_names[:6]``, with the URDF model appended to the last
    (``appendModel``, which carries its root body). Pinocchio 4.1's
    ``computeRNEADerivatives`` treats a joint's motion subspace as constant in the joint
    frame, which the composite's is not (it turns with the rotations): its composite
    derivatives differ from finite differences of its own ``rnea``; those of the separate
    joints do not. joint_names : our joint order, the six virtual joints first, then the
    URDF's joints, matched by name.

    Returns (pin_model, perm) as ``pinocchio_from_urdf``, with ``gravity`` (default
    (0, 0, -9.81); the y-up human's is (0, -9.81, 0)).
    """
    joints = [getattr(pinocchio, f"JointModel{name}")()
              for name in [f"P{a}" for a in "XYZ"] + [f"R{a}" for a in axes.upper()]]
    urdf = str(path)
    if composite:
        root = pinocchio.JointModelComposite()
        for joint in joints:
            root.addJoint(joint)
        pin_model = pinocchio.buildModelFromUrdf(urdf, root)
        virtual = [pin_model.joints[1].idx_q + k for k in range(6)]
    else:
        chain, parent = pinocchio.Model(), 0
        for name, joint in zip(joint_names[:6], joints):
            parent = chain.addJoint(parent, joint, pinocchio.SE3.Identity(), name)
        frame = chain.addFrame(pinocchio.Frame("floating_base", parent, 0,
                                               pinocchio.SE3.Identity(),
                                               pinocchio.FrameType.OP_FRAME))
        pin_model = pinocchio.appendModel(chain, pinocchio.buildModelFromUrdf(urdf), frame,
                                          pinocchio.SE3.Identity())
        virtual = [pin_model.joints[pin_model.getJointId(name)].idx_q
                   for name in joint_names[:6]]
    pin_model.gravity = pinocchio.Motion(np.asarray(gravity, dtype=np.float64), np.zeros(3))
    perm = np.array(virtual + [pin_model.joints[pin_model.getJointId(name)].idx_q
                               for name in joint_names[6:]], dtype=np.int64)
    if pin_model.nq != pin_model.nv or sorted(perm) != list(range(pin_model.nv)):
        raise ValueError(f"joint_names: expected the six floating coordinates and the "
                         f"{pin_model.nv - 6} one-DoF joints of {path}, got {list(joint_names)}")
    return pin_model, perm


def configuration_by_name(pin_model, joint_names, q):
    """(q_pin, idx_v): the Pinocchio configuration (nq,) with the one-DoF joints named
    ``joint_names`` at ``q`` (unbounded, i.e. continuous, joints as (cos q, sin q), the others
    neutral), and the velocity index of each named joint."""
    q_pin = pinocchio.neutral(pin_model)
    idx_v = []
    for name, q_i in zip(joint_names, q):
        joint = pin_model.joints[pin_model.getJointId(name)]
        q_pin[joint.idx_q:joint.idx_q + joint.nq] = (
            (np.cos(q_i), np.sin(q_i)) if joint.nq == 2 else q_i)
        idx_v.append(joint.idx_v)
    return q_pin, idx_v


def rnea_by_name(pin_model, joint_names, q, v, a):
    """Joint torques (nv,) in the order of ``joint_names`` from ``pinocchio.rnea`` on a model
    parsed from a URDF, joints matched by name (``configuration_by_name``); the unnamed
    joints (mimic joints of a ``mimic=True`` parse) at rest."""
    q_pin, idx_v = configuration_by_name(pin_model, joint_names, q)
    v_pin, a_pin = np.zeros(pin_model.nv), np.zeros(pin_model.nv)
    v_pin[idx_v], a_pin[idx_v] = v, a
    return pinocchio.rnea(pin_model, pin_model.createData(), q_pin, v_pin, a_pin)[idx_v]


# --- helpers: our order in, our order out, angular-first ---

def _pin_vector(x, perm):
    """Joint vector (nv,) from our order to Pinocchio's order."""
    x = np.asarray(x, dtype=np.float64)
    if perm is None:
        return x
    out = np.empty_like(x)
    out[perm] = x
    return out


def _our_order(x, perm):
    """Joint vector (nv,) or joint-by-joint matrix (nv, nv) from Pinocchio's order to ours."""
    if perm is None:
        return np.array(x)
    return np.array(x)[np.ix_(perm, perm)] if np.ndim(x) == 2 else np.array(x)[perm]


def _joint_ids(pin_model, perm):
    """Pinocchio joint ids (nv,) of our joints (all one-DoF: the joint at each q index)."""
    id_of_index = {pin_model.joints[j].idx_q: j for j in range(1, pin_model.njoints)}
    indices = range(pin_model.nv) if perm is None else perm
    return [id_of_index[k] for k in indices]


def _symmetrized(upper):
    """The symmetric matrix whose upper triangle is that of ``upper``."""
    return np.triu(upper) + np.triu(upper, 1).T


def _angular_first(motion_or_force):
    """Pinocchio Motion [v; omega] or Force [f; n] -> angular-first (6,) array."""
    return np.concatenate([motion_or_force.angular, motion_or_force.linear])


def rnea(pin_model, q, v, a, perm=None):
    """Joint torques tau (nv,) = M a + C v + g from ``pinocchio.rnea``, model gravity included."""
    data = pin_model.createData()
    tau = pinocchio.rnea(pin_model, data, _pin_vector(q, perm), _pin_vector(v, perm),
                         _pin_vector(a, perm))
    return _our_order(tau, perm)


def mass_matrix(pin_model, q, perm=None):
    """Joint-space mass matrix M(q) (nv, nv) from ``pinocchio.crba``, symmetrized."""
    data = pin_model.createData()
    return _our_order(_symmetrized(pinocchio.crba(pin_model, data, _pin_vector(q, perm))), perm)


def rnea_derivatives(pin_model, q, v, a, perm=None):
    """(dtau_dq, dtau_dv, M), each (nv, nv), from ``pinocchio.computeRNEADerivatives``.

    Derivatives of the rnea torque (gravity included); M = dtau_da, symmetrized.
    """
    data = pin_model.createData()
    dtau_dq, dtau_dv, dtau_da = pinocchio.computeRNEADerivatives(
        pin_model, data, _pin_vector(q, perm), _pin_vector(v, perm), _pin_vector(a, perm))
    return (_our_order(dtau_dq, perm), _our_order(dtau_dv, perm),
            _our_order(_symmetrized(dtau_da), perm))


def body_velocities(pin_model, q, v, perm=None):
    """Body twists (nv, 6) [omega; v] of the joint (= link) frames, each in its own frame.

    ``data.v[1:]`` after ``forwardKinematics(q, v)``, permuted to angular-first.
    """
    data = pin_model.createData()
    pinocchio.forwardKinematics(pin_model, data, _pin_vector(q, perm), _pin_vector(v, perm))
    return np.array([_angular_first(data.v[j]) for j in _joint_ids(pin_model, perm)])


def body_momenta(pin_model, q, v, perm=None):
    """Body momenta (nv, 6) [n; f] about the joint (= link) frame origins, each in its own frame.

    ``model.inertias[j] * data.v[j]`` (Pinocchio's own spatial inertia of the body,
    locked subtrees merged in) after ``forwardKinematics(q, v)``, permuted to angular-first.
    """
    data = pin_model.createData()
    pinocchio.forwardKinematics(pin_model, data, _pin_vector(q, perm), _pin_vector(v, perm))
    return np.array([_angular_first(pin_model.inertias[j] * data.v[j])
                     for j in _joint_ids(pin_model, perm)])


def body_accelerations(pin_model, q, v, a, perm=None):
    """Body accelerations (nv, 6) [domega; dv] of the joint frames, each in its own frame.

    ``data.a[1:]`` after ``forwardKinematics(q, v, a)``, permuted to angular-first. This is
    Pinocchio's *spatial* acceleration in the body frame: the time derivative of the
    components of the body twist ``data.v`` (Featherstone's acceleration in body
    coordinates), without gravity. It is NOT Pinocchio's "classical" acceleration
    (``getFrameClassicalAcceleration``), whose linear part is the acceleration of the
    frame origin, ``dv + omega x v``.
    """
    data = pin_model.createData()
    pinocchio.forwardKinematics(pin_model, data, _pin_vector(q, perm), _pin_vector(v, perm),
                                _pin_vector(a, perm))
    return np.array([_angular_first(data.a[j]) for j in _joint_ids(pin_model, perm)])


def link_poses(pin_model, q, perm=None):
    """World poses (nv, 4, 4) of the joint (= link) frames: ``data.oMi[1:]``, homogeneous."""
    data = pin_model.createData()
    pinocchio.forwardKinematics(pin_model, data, _pin_vector(q, perm))
    return np.array([data.oMi[j].homogeneous for j in _joint_ids(pin_model, perm)])
