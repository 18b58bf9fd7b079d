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
"""

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
        return self._a.copy()

    def _scalar(self, convert):
        stats.transfers += 1
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
        return _wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        return _wrap(func(*_unwrap(args), **_unwrap_kwargs(kwargs)))

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
            return _wrap(attribute(*_unwrap(args), **_unwrap_kwargs(kwargs)))
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
        return _wrap(out)

    def __setitem__(self, key, value):
        self._a[_index(key, self._a.shape)] = _unwrap(value)

    def __repr__(self):
        return "device_" + repr(self._a)

    __str__ = lambda self: str(self._a)
    __hash__ = None


def _unwrap_kwargs(kwargs):
    return {k: _unwrap(v) for k, v in kwargs.items()}


def _binary(op, reflected=False):
    def method(self, other):
        other = _unwrap(other)
        return _wrap(op(other, self._a) if reflected else op(self._a, other))
    return method


def _inplace(op):
    def method(self, other):
        self._a = op(self._a, _unwrap(other))
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
            (lambda op: lambda self: _wrap(op(self._a)))(getattr(operator, _name)))


# ---------------------------------------------------------------- the module: `xp`

class _Ufunc:
    """A NumPy ufunc on device arrays: call, reduce, accumulate; reduceat for add; no at."""

    def __init__(self, ufunc):
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__

    def __call__(self, *args, **kwargs):
        return _wrap(self._ufunc(*_unwrap(args), **_unwrap_kwargs(kwargs)))

    def reduce(self, *args, **kwargs):
        return _wrap(self._ufunc.reduce(*_unwrap(args), **_unwrap_kwargs(kwargs)))

    def accumulate(self, *args, **kwargs):
        return _wrap(self._ufunc.accumulate(*_unwrap(args), **_unwrap_kwargs(kwargs)))

    def reduceat(self, *args, **kwargs):
        if self._ufunc is not numpy.add:
            raise AttributeError(f"CuPy has reduceat for add only, not {self.__name__}")
        return _wrap(self._ufunc.reduceat(*_unwrap(args), **_unwrap_kwargs(kwargs)))

    def at(self, *args, **kwargs):
        raise TypeError(f"{self.__name__}.at does not exist on the device (CuPy)")


def _function(function, allow_host):
    def call(*args, **kwargs):
        return _wrap(function(*_unwrap(args, allow_host), **_unwrap_kwargs(kwargs)))
    call.__name__ = call.__qualname__ = getattr(function, "__name__", "function")
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
                            "__name__": "simulator"})
module.__name__ = "simulator"
