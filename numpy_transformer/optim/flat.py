"""A model's parameters and gradients in one flat buffer per dtype, the layers' arrays views
into it: what `Adam(model, fast=True)` (optim/fast.py's flat step) updates in a few operations.

    layout = flatten(model, order)            # order: the parameters' names, group after group
    layout.buffers[0].param                   # (P,): every float32 parameter, end to end
    model.proj.params["weight"]               # a view into it, (D_in, D_out) as before
    FlatState(layout, group_of, ("exp_avg", "exp_avg_sq"), 2, default_block())
                                              # an optimizer's: its m, v, scratch and pieces

Layout. The parameters of one dtype lie end to end in the order given (the optimizer gives
its groups' names, group after group), and their gradients alike, at the same offsets:

    param (P,) = [ p_a | p_b | ... ]          p of shape s at offset o = param[o : o + prod(s)]
    grad  (P,) = [ g_a | g_b | ... ]          g likewise, at the same o

so a parameter group is one slice [start, stop) of the buffer (its weight decay is one
operation), and anything kept per parameter (Adam's m and v) is a buffer of the same
length whose slices match (`BufferLayout.split`).

Re-homing. `flatten` copies every value into the buffers, then rebinds each module's
`params[key]` and `grads[key]` that held an array to the array's view (both holders of a
tied array: the same view). Layers read `self.params["weight"]` when they run, so they
use the views from then on; names, shapes, dtypes and values are unchanged, and every
in-place update of the buffer is an update of the layers' arrays. An array taken from
`module.params` BEFORE is no longer the model's: take it again. A model laid out already
keeps its buffers (a second optimizer shares them), whatever the order it asks for.

Pieces. An update walks each buffer in pieces [start, stop), each with the slices of it
that belong to each group:
- NumPy (the CPU): blocks of at most BLOCK elements, cut inside the groups. Every operation
  of the update runs on one block, which stays in the L2 cache, before the next block: each
  array is read from and written to memory about once a step, not once per operation.
- a device (CuPy, the simulator): one piece, the whole buffer, each operation one kernel
  over every parameter: a handful of launches a step, whatever the number of arrays.
"""

import weakref

from ..backend import get_backend, xp
from ..errors import InputError

BLOCK = 32768       # elements of a CPU block: p, g, m, v and a scratch row, float32: 640 KiB

_layouts = weakref.WeakKeyDictionary()      # model -> its Layout (the last flatten)


class BufferLayout:
    """The parameters of one dtype: `param` and `grad` (P,), and where each one lies."""

    def __init__(self, dtype, named):
        self.dtype, self.where, offset = dtype, {}, 0
        for name, param, _ in named:                        # (name, offset, shape)
            self.where[name] = (offset, param.shape)
            offset += param.size
        self.size = offset                                  # P
        self.param = xp.empty(offset, dtype=dtype)          # (P,)
        self.grad = xp.empty(offset, dtype=dtype)           # (P,)

    def split(self, flat):
        """{name: the parameter's view of `flat`}, for any (P,) array laid out as `param`."""
        return {name: flat[o:o + _size(shape)].reshape(shape)
                for name, (o, shape) in self.where.items()}

    def runs(self, group_of):
        """[(start, stop, group)]: the buffer cut where the group (`group_of[name]`) changes;
        one run per group when the buffer was laid out group after group."""
        runs = []
        for name, (o, shape) in self.where.items():         # in layout order
            if runs and runs[-1][2] == group_of[name]:
                runs[-1] = (runs[-1][0], o + _size(shape), group_of[name])
            else:
                runs.append((o, o + _size(shape), group_of[name]))
        return runs


class Layout:
    """A model's buffers, one BufferLayout per dtype, and a check that they are still its."""

    def __init__(self, buffers, views, holder):
        self.buffers = buffers
        self.views = views              # {name: the parameter's view, as the layers hold it}
        self._holder = holder           # (module, key, view): one entry `flatten` rebound

    def is_current(self):
        """True while the model's arrays are this layout's views (one identity test)."""
        module, key, view = self._holder
        return module.params.get(key) is view

    def holds(self, named):
        """True when the layout's views are exactly the arrays `named` ({name: param})."""
        return self.views.keys() == named.keys() and all(
            param is self.views[name] for name, param in named.items())


def flatten(model, order):
    """The model's Layout: its parameters and gradients re-homed into one buffer per dtype,
    in the order of the names `order` (every parameter once); a model laid out already,
    its arrays still the views, keeps its Layout."""
    named = {name: (param, grad) for name, param, grad in model.named_parameters()}
    layout = _layouts.get(model)
    if layout is not None and layout.holds({n: p for n, (p, _) in named.items()}):
        return layout
    dtypes = list(dict.fromkeys(named[name][0].dtype for name in order))
    buffers = [BufferLayout(dt, [(n, *named[n]) for n in order if named[n][0].dtype == dt])
               for dt in dtypes]
    views, params, grads = {}, {}, {}       # name -> view; id of the old array -> its view
    for buffer in buffers:
        for (name, view), grad_view in zip(buffer.split(buffer.param).items(),
                                           buffer.split(buffer.grad).values()):
            param, grad = named[name]
            view[...] = param                              # copy the values in
            grad_view[...] = grad
            views[name], params[id(param)], grads[id(grad)] = view, view, grad_view
    holder = None
    for _, module in model.named_modules():                # rebind every holder
        for key, array in module.params.items():
            if id(array) in params:
                module.params[key] = params[id(array)]
                holder = holder or (module, key, module.params[key])
        for key, array in module.grads.items():
            if id(array) in grads:
                module.grads[key] = grads[id(array)]
    _layouts[model] = layout = Layout(buffers, views, holder)
    return layout


class FlatState:
    """What a flat optimizer walks each step: for each buffer of the model's Layout (one per
    dtype), its own state buffers {name: (P,)} (Adam's m and v), its scratch (num_scratch, n)
    and its pieces [(start, stop, [(lo, hi, group index)])]: CPU blocks, or the whole buffer."""

    def __init__(self, layout, group_of, buffer_names, num_scratch, block):
        self.layout = layout
        self.state = [{b: xp.zeros(buffer.size, dtype=buffer.dtype) for b in buffer_names}
                      for buffer in layout.buffers]
        self.cut(group_of, num_scratch, block)

    def cut(self, group_of, num_scratch, block):
        """The pieces of at most `block` elements (None: the whole buffer) and the scratch."""
        self.pieces = [pieces(buffer.runs(group_of), block)
                       for buffer in self.layout.buffers]
        self.scratch = [xp.empty((num_scratch, max(stop - start for start, stop, _ in p)),
                                 dtype=buffer.dtype)
                        for buffer, p in zip(self.layout.buffers, self.pieces)]

    def check_current(self):
        """InputError when the model's arrays are no longer this layout's views."""
        if not self.layout.is_current():
            raise InputError("the model's parameters are no longer the flat buffers this "
                             "optimizer updates (another flat optimizer re-homed them, or "
                             "an array was replaced): build the optimizer again")


def pieces(runs, block):
    """[(start, stop, [(lo, hi, group)])]: the pieces an update walks, each with its groups'
    slices (lo, hi relative to the piece's start). block None: one piece, the whole buffer;
    else at most `block` elements each, cut inside each run (one group a piece)."""
    if block is None:
        start = runs[0][0]
        return [(start, runs[-1][1], [(lo - start, hi - start, g) for lo, hi, g in runs])]
    return [(lo, min(lo + block, stop), [(0, min(lo + block, stop) - lo, group)])
            for start, stop, group in runs for lo in range(start, stop, block)]


def default_block():
    """BLOCK on the CPU (NumPy), None (the whole buffer at once) on a device."""
    return BLOCK if get_backend() == "numpy" else None


def gradient_buffer(model):
    """The model's gradients as one flat (P,) array when a fast optimizer laid them out so
    (one dtype) and they are still the layers' arrays; else None."""
    layout = _layouts.get(model)
    if layout is None or not layout.is_current() or len(layout.buffers) != 1:
        return None
    return layout.buffers[0].grad


def _size(shape):
    n = 1
    for s in shape:
        n *= s
    return n
