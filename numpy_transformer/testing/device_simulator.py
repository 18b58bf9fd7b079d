"""A pretend GPU on the CPU: an array module that behaves like CuPy where CuPy is strict.

Test support, not a backend for users. `NUMPY_TRANSFORMER_BACKEND=simulator`
(or `set_backend("simulator")`) makes `xp` this module, so the whole package,
its tests, commands and lessons can be run on a machine without a GPU and
still fail wherever they would fail under CuPy:

- a `DeviceArray` wraps a NumPy array ("device memory") and refuses to be
  turned into a NumPy array implicitly: `numpy.asarray(d)`, `numpy.mean(d)` on a
  mix, `d + numpy_array` and `numpy_array + d` raise CuPy's TypeError;
- module functions refuse plain NumPy array arguments, except the ones that
  copy host data to the device (`asarray`, `array`, ...);
- the explicit ways back are CuPy's: `d.get()`, `simulator.asnumpy(d)`, and
  `float(d)`, `int(d)`, `bool(d)`, `d.item()`, `d.tolist()` on small arrays;
- `numpy.add.at(d, ...)` fails (CuPy's ufuncs have no `.at`), `reduceat`
  exists for `add` only (as in CuPy >= 12);
- reductions return 0-d device arrays, not Python or NumPy scalars;
- integer-array indices out of range wrap around instead of raising.

Every device-to-host transfer is counted in `stats.transfers`, and every
array made in `stats.dtypes`, so a test can prove that a training step stays
on the device and in float32 (see tests/core/test_device_simulator.py).

Kernel launches are counted too, while a counter is on (off by default, and cheap):

    with device_simulator.count_launches() as launches:
        step()
    launches.total, launches.by_kind, launches.by_name.most_common(10)

Counted, as CuPy would queue them on the stream: every ufunc call, reduction and
in-place operator, matrix product, fancy indexing and item assignment, concatenation,
`where`, `take`, random draws (kind "kernel"), with what CuPy adds around some of them
(a batched matrix product copies its operands that are not C-contiguous, an assignment
through a boolean mask scans it and copies its count to the host: `_count_matmul`,
`_count_setitem`); `zeros`, `zeros_like` and `fill(0)` on a
contiguous array ("memset"); a copy of a contiguous array to a contiguous one, as
`copy()` and `astype` of the same dtype ("memcpy", device to device); host transfers
both ways ("memcpy"). Not counted: views (reshape and ravel where NumPy makes a view,
transpose, swapaxes, basic slicing, broadcast_to, expand_dims, squeeze, `.T`), `empty`.
Code that the device runs as one fused kernel (cupy.fuse, an ElementwiseKernel) runs its
plain form here inside `counted_as_one(name)`, which counts it as one launch; the module
answers `xp.counted_as_one` too, so that the core's fused drop-ins (layers/fused/) reach it
without importing this test stand-in.
Counters nest: each one on counts every launch.
"""

import contextlib
import operator
from collections import Counter

import numpy

IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. "
            "Please use `.get()` to construct a NumPy array explicitly.")
HOST_TO_DEVICE = ("asarray", "array", "asanyarray", "ascontiguousarray")


class Stats:
    """What the simulated device saw: host transfers and the dtypes of the arrays made."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.transfers = 0
        self.dtypes = Counter()


stats = Stats()


# ---------------------------------------------------------------- kernel launches

class Launches:
    """Launches counted while this counter is on: by kind ("kernel", "memset", "memcpy")
    and by name (the operation: "multiply", "matmul", "getitem[fancy]", ...)."""

    def __init__(self):
        self.by_kind = Counter()
        self.by_name = Counter()

    @property
    def total(self):
        """Every launch: kernels, memsets and copies."""
        return sum(self.by_kind.values())

    @property
    def kernels(self):
        return self.by_kind["kernel"]

    @property
    def memsets(self):
        return self.by_kind["memset"]

    @property
    def copies(self):
        return self.by_kind["memcpy"]

    def __repr__(self):
        return (f"Launches(total={self.total}, kernels={self.kernels}, "
                f"memsets={self.memsets}, copies={self.copies})")


_counters = []      # the counters on (innermost last); empty: counting is off
_fused = [0]        # depth of counted_as_one regions


def _launch(name, kind="kernel", n=1):
    """Count `n` launches on every counter that is on (none inside a fused region)."""
    if _fused[0]:
        return
    for counter in _counters:
        counter.by_kind[kind] += n
        counter.by_name[name] += n


@contextlib.contextmanager
def count_launches():
    """Count the launches of the region: `with count_launches() as launches: ...`."""
    counter = Launches()
    _counters.append(counter)
    try:
        yield counter
    finally:
        _counters.remove(counter)


class counted_as_one(contextlib.ContextDecorator):
    """A fused kernel: everything inside (a context or a decorated function) counts as
    one launch named `name`, as cupy.fuse or an ElementwiseKernel would run it."""

    def __init__(self, name="fused"):
        self.name = name

    def __enter__(self):
        _fused[0] += 1
        return self

    def __exit__(self, *exc):
        _fused[0] -= 1
        if _counters and not _fused[0]:
            _launch(f"fused:{self.name}")
        return False


def _root(a):
    """The array that owns `a`'s memory (NumPy's views point at it)."""
    return a if a.base is None else a.base


def _count_view(name, source, result):
    """A view costs nothing; where NumPy had to copy (reshape of a strided array), a copy."""
    if isinstance(result, numpy.ndarray) and isinstance(source, numpy.ndarray) \
            and result.base is not None and _root(result) is _root(source):
        return
    _launch(name + "[copy]")


def _count_copy(name, source):
    """A copy: device to device memcpy when contiguous, else a copy kernel."""
    if isinstance(source, numpy.ndarray) and not source.flags.c_contiguous:
        _launch(name)
    else:
        _launch(name, "memcpy")


def _first_array(args, kwargs):
    for value in args:
        if type(value) is DeviceArray:
            return value._a
        if isinstance(value, (list, tuple)):
            for v in value:
                if type(v) is DeviceArray:
                    return v._a
    for value in kwargs.values():
        if type(value) is DeviceArray:
            return value._a
    return None


VIEWS = frozenset(("reshape", "transpose", "swapaxes", "moveaxis", "rollaxis", "broadcast_to",
                   "expand_dims", "squeeze", "ravel", "view", "diagonal", "atleast_1d",
                   "atleast_2d", "atleast_3d", "real", "split", "array_split", "broadcast_arrays",
                   "flip", "fliplr", "flipud"))
NO_LAUNCH = frozenset(("empty", "empty_like", "shape", "ndim", "size", "result_type",
                       "can_cast", "promote_types", "may_share_memory", "shares_memory",
                       "isscalar", "iscomplexobj", "isrealobj", "asnumpy", "get_array_module"))
MEMSET = frozenset(("zeros", "zeros_like"))
JOINS = frozenset(("concatenate", "stack", "hstack", "vstack", "column_stack", "dstack"))
SYNCS = frozenset(("nonzero", "argwhere", "flatnonzero", "unique"))   # count comes back
MULTI = {"nonzero": 3, "argwhere": 3, "flatnonzero": 3, "var": 3, "std": 4, "unique": 6,
         "norm": 2, "sort": 2, "argsort": 2, "searchsorted": 1, "cumsum": 1}


def _count_matmul(a, b):
    """A matrix product: one cuBLAS launch (gemm, or gemv for a vector), after what CuPy's
    matmul does first (cupy/_core/_routines_linalg.pyx): a product of more than two
    dimensions copies every operand that is not C-contiguous (`ascontiguousarray`), and
    one whose batch axes broadcast builds pointer arrays (a kernel per batch axis and
    operand); a 2-D one copies an operand that is neither row nor column major."""
    if not (isinstance(a, numpy.ndarray) and isinstance(b, numpy.ndarray)):
        _launch("matmul")
        return
    ndim = max(a.ndim, b.ndim)
    if ndim > 2:
        for x in (a, b):
            if x.ndim > 1 and not x.flags.c_contiguous:
                _launch("matmul[copy]")
        if a.shape[:-2] != b.shape[:-2]:
            _launch("matmul[pointers]", n=3 * (ndim - 2))
    else:
        for x in (a, b):
            if x.ndim == 2 and x.itemsize not in x.strides:
                _launch("matmul[copy]")
    _launch("matmul")


def _count_call(name, args, kwargs, result):
    """The launches of `xp.name(*args, **kwargs)` (or NumPy's name on device arrays)."""
    if name in NO_LAUNCH:
        return
    if name in VIEWS:
        _count_view(name, _first_array(args, kwargs), result)
        return
    if name in MEMSET:
        _launch(name, "memset")
        return
    if name in HOST_TO_DEVICE:
        source = args[0] if args else kwargs.get("a", kwargs.get("obj"))
        if type(source) is not DeviceArray:
            _launch("memcpy_htod", "memcpy")
        elif name == "array" and kwargs.get("copy", True):
            dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
            if dtype is None or numpy.dtype(dtype) == source._a.dtype:
                _count_copy("copy", source._a)
            else:
                _launch("astype")
        elif isinstance(result, DeviceArray) and result._a is not source._a:
            _launch("astype" if result._a.dtype != source._a.dtype else "copy")
        return
    if name in ("matmul", "dot") and len(args) >= 2:
        _count_matmul(_unwrap(args[0], True), _unwrap(args[1], True))
        return
    if name in JOINS:
        arrays = args[0] if args else kwargs.get("arrays", ())
        _launch(name, n=max(1, len(arrays)))
        return
    _launch(name, n=MULTI.get(name, 1))
    if name in SYNCS:
        _launch("memcpy_dtoh", "memcpy")


def _count_method(name, array, args, kwargs, result):
    """The launches of `array.name(*args, **kwargs)` (array: the NumPy array behind)."""
    if name in VIEWS:
        _count_view(name, array, result)
    elif name == "fill":
        value = args[0] if args else kwargs.get("value")
        if array.flags.c_contiguous and not isinstance(value, DeviceArray) and value == 0:
            _launch("fill", "memset")
        else:
            _launch("fill")
    elif name == "copy":
        _count_copy("copy", array)
    elif name == "astype":
        dtype = numpy.dtype(args[0] if args else kwargs.get("dtype", array.dtype))
        if dtype != array.dtype:
            _launch("astype")
        elif kwargs.get("copy", args[2] if len(args) > 2 else True):
            _count_copy("copy", array)
    elif name in ("flatten",):
        _count_copy("copy", array)
    elif name in ("tobytes", "tofile"):
        _launch("memcpy_dtoh", "memcpy")
    elif name not in NO_LAUNCH:
        _launch(name, n=MULTI.get(name, 1))
        if name in SYNCS:
            _launch("memcpy_dtoh", "memcpy")


def _count_setitem(key):
    """Item assignment: one kernel; through a boolean mask, CuPy scans the mask (two
    kernels) and copies the number of True to the host (a copy, a synchronisation)."""
    keys = key if isinstance(key, tuple) else (key,)
    kinds = [k.dtype.kind for k in keys if isinstance(k, numpy.ndarray)]
    if "b" in kinds:
        _launch("setitem[mask]", n=3)
        _launch("memcpy_dtoh", "memcpy")
    else:
        _launch("setitem[fancy]" if kinds else "setitem")


def _count_getitem(key, array, result):
    """Basic indexing is a view; an integer array is a gather kernel, a boolean mask a
    scan, a copy of its count to the host and a gather."""
    keys = key if isinstance(key, tuple) else (key,)
    for k in keys:
        if isinstance(k, numpy.ndarray) or isinstance(k, list):
            if getattr(k, "dtype", None) == bool:
                _launch("getitem[mask]", n=3)
                _launch("memcpy_dtoh", "memcpy")
            else:
                _launch("getitem[fancy]")
            return


def _refuse(value):
    raise TypeError(f"Unsupported type {type(value)}: a NumPy array cannot meet a device "
                    "array; move it to the device first with xp.asarray")


def _unwrap(value, allow_host=False):
    """The NumPy array behind `value` (lists and tuples walked); host arrays refused."""
    if type(value) is DeviceArray:
        return value._a
    if isinstance(value, numpy.ndarray) and not allow_host:
        _refuse(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v, allow_host) for v in value)
    return value


def _wrap(value):
    """Device arrays for every NumPy array or scalar in `value` (tuples and lists walked)."""
    if isinstance(value, (numpy.ndarray, numpy.generic)) and not isinstance(value, numpy.dtype):
        stats.dtypes[value.dtype.name] += 1
        return DeviceArray(numpy.asarray(value))
    if isinstance(value, (list, tuple)):
        return type(value)(_wrap(v) for v in value)
    return value


def _index(key, shape):
    """A NumPy index for `key`: device arrays unwrapped, integer arrays wrapped into range."""
    keys = key if isinstance(key, tuple) else (key,)
    out, axis = [], 0
    for k in keys:
        k = k._a if type(k) is DeviceArray else k
        if isinstance(k, numpy.ndarray) and k.dtype.kind in "iu" and axis < len(shape):
            k = k % shape[axis] if shape[axis] else k         # CuPy wraps, NumPy raises
        out.append(k)
        axis += 0 if k is None or k is Ellipsis else (k.ndim if isinstance(k, numpy.ndarray)
                                                       and k.dtype == bool else 1)
    return tuple(out) if isinstance(key, tuple) else out[0]


class DeviceArray:
    """An array in simulated device memory (a NumPy array that will not leave implicitly)."""

    __slots__ = ("_a",)
    __array_priority__ = 1000

    def __init__(self, array):
        self._a = array

    # the explicit ways to the host, each counted as a transfer
    def get(self):
        stats.transfers += 1
        if _counters:
            _launch("memcpy_dtoh", "memcpy")
        return self._a.copy()

    def _scalar(self, convert):
        stats.transfers += 1
        if _counters:
            _launch("memcpy_dtoh", "memcpy")
        return convert(self._a)

    def __float__(self):
        return self._scalar(float)

    def __int__(self):
        return self._scalar(int)

    def __bool__(self):
        return self._scalar(bool)

    def __index__(self):
        return self._scalar(operator.index)

    def __format__(self, spec):
        return self._scalar(lambda a: format(a, spec))

    def item(self, *args):
        return self._scalar(lambda a: a.item(*args))

    def tolist(self):
        return self._scalar(numpy.ndarray.tolist)

    def __array__(self, dtype=None, copy=None):
        raise TypeError(IMPLICIT)

    # NumPy's own functions and ufuncs called on a device array (as CuPy allows)
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "at":
            raise TypeError(f"numpy.{ufunc.__name__}.at does not work on device arrays "
                            "(CuPy ufuncs have no .at; use cupyx.scatter_add or a sort "
                            "and add.reduceat)")
        result = getattr(ufunc, method)(*_unwrap(inputs), **_unwrap_kwargs(kwargs))
        if _counters:
            _launch(ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}")
        return _wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        result = func(*_unwrap(args), **_unwrap_kwargs(kwargs))
        if _counters:
            _count_call(func.__name__, args, kwargs, result)
        return _wrap(result)

    # attributes and methods come from the NumPy array behind
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: DeviceArray(self._a.T))
    device = property(lambda self: "simulated device")

    def __getattr__(self, name):
        if name.startswith("__"):              # __array_interface__ & co. would leak the memory
            raise AttributeError(name)
        attribute = getattr(self._a, name)
        if not callable(attribute):
            return _wrap(attribute)

        def method(*args, **kwargs):
            result = attribute(*_unwrap(args), **_unwrap_kwargs(kwargs))
            if _counters:
                _count_method(name, self._a, args, kwargs, result)
            return _wrap(result)
        return method

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (DeviceArray(numpy.asarray(row)) for row in self._a)

    def __getitem__(self, key):
        key = _index(key, self._a.shape)
        out = self._a[key]
        if isinstance(out, numpy.generic):     # an element: CuPy gives a 0-d view, not a copy
            out = self._a[(key if isinstance(key, tuple) else (key,)) + (Ellipsis,)]
        if _counters:
            _count_getitem(key, self._a, out)
        return _wrap(out)

    def __setitem__(self, key, value):
        key = _index(key, self._a.shape)
        self._a[key] = _unwrap(value)
        if _counters:
            _count_setitem(key)

    def __repr__(self):
        return "device_" + repr(self._a)

    __str__ = lambda self: str(self._a)
    __hash__ = None


def _unwrap_kwargs(kwargs):
    return {k: _unwrap(v) for k, v in kwargs.items()}


def _binary(op, reflected=False):
    def method(self, other):
        other = _unwrap(other)
        result = op(other, self._a) if reflected else op(self._a, other)
        if _counters:
            if op is operator.matmul:
                _count_matmul(self._a, other)
            else:
                _launch(op.__name__)
        return _wrap(result)
    return method


def _inplace(op):
    def method(self, other):
        self._a = op(self._a, _unwrap(other))
        if _counters:
            if op is operator.imatmul:
                _count_matmul(self._a, _unwrap(other))
            else:
                _launch(op.__name__)
        return self
    return method


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul",
              "and", "or", "xor", "lshift", "rshift"):
    _op = getattr(operator, _name + "_" if _name in ("and", "or") else _name)
    setattr(DeviceArray, f"__{_name}__", _binary(_op))
    setattr(DeviceArray, f"__r{_name}__", _binary(_op, reflected=True))
    setattr(DeviceArray, f"__i{_name}__", _inplace(getattr(operator, f"i{_name}")))
for _name in ("lt", "le", "eq", "ne", "gt", "ge"):
    setattr(DeviceArray, f"__{_name}__", _binary(getattr(operator, _name)))
for _name in ("neg", "pos", "abs", "invert"):
    setattr(DeviceArray, f"__{_name}__",
            (lambda op: lambda self: _unary(op, self))(getattr(operator, _name)))


def _unary(op, array):
    if _counters:
        _launch(op.__name__)
    return _wrap(op(array._a))


# ---------------------------------------------------------------- the module: `xp`

class _Ufunc:
    """A NumPy ufunc on device arrays: call, reduce, accumulate; reduceat for add; no at."""

    def __init__(self, ufunc):
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__

    def __call__(self, *args, **kwargs):
        result = self._ufunc(*_unwrap(args), **_unwrap_kwargs(kwargs))
        if _counters:
            _launch(self.__name__)
        return _wrap(result)

    def reduce(self, *args, **kwargs):
        result = self._ufunc.reduce(*_unwrap(args), **_unwrap_kwargs(kwargs))
        if _counters:
            _launch(self.__name__ + ".reduce")
        return _wrap(result)

    def accumulate(self, *args, **kwargs):
        result = self._ufunc.accumulate(*_unwrap(args), **_unwrap_kwargs(kwargs))
        if _counters:
            _launch(self.__name__ + ".accumulate")
        return _wrap(result)

    def reduceat(self, *args, **kwargs):
        if self._ufunc is not numpy.add:
            raise AttributeError(f"CuPy has reduceat for add only, not {self.__name__}")
        result = self._ufunc.reduceat(*_unwrap(args), **_unwrap_kwargs(kwargs))
        if _counters:
            _launch(self.__name__ + ".reduceat")
        return _wrap(result)

    def at(self, *args, **kwargs):
        raise TypeError(f"{self.__name__}.at does not exist on the device (CuPy)")


def _function(function, allow_host):
    name = getattr(function, "__name__", "function")

    def call(*args, **kwargs):
        result = function(*_unwrap(args, allow_host), **_unwrap_kwargs(kwargs))
        if _counters:
            _count_call(name, args, kwargs, result)
        return _wrap(result)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = function.__doc__
    return call


class _Generator:
    """A seeded random generator on the device (CuPy's `cupy.random.default_rng`)."""

    def __init__(self, seed=None):
        self._rng = numpy.random.default_rng(seed)

    def __getattr__(self, name):
        return _function(getattr(self._rng, name), allow_host=False)


class _Namespace:
    """NumPy's names, with functions that take and give device arrays."""

    def __init__(self, module, overrides=()):
        self._module = module
        self._overrides = dict(overrides)

    def __getattr__(self, name):
        if name in self._overrides:
            value = self._overrides[name]
        else:
            value = getattr(self._module, name)
            if isinstance(value, numpy.ufunc):
                value = _Ufunc(value)
            elif callable(value) and not isinstance(value, type):
                value = _function(value, allow_host=name in HOST_TO_DEVICE)
            elif isinstance(value, type(numpy)):
                value = _Namespace(value)
        setattr(self, name, value)
        return value


def asnumpy(array):
    """A NumPy copy of a device array (NumPy input is returned as it is)."""
    return array.get() if type(array) is DeviceArray else numpy.asarray(array)


random = _Namespace(numpy.random, {"default_rng": _Generator})
module = _Namespace(numpy, {"ndarray": DeviceArray, "asnumpy": asnumpy, "random": random,
                            "counted_as_one": counted_as_one, "__name__": "simulator"})
module.__name__ = "simulator"
