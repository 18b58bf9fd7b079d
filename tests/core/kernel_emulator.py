"""The fused drop-ins' CUDA kernels run on the CPU, for tests/core/test_fused.py.

No GPU is at hand between loans, so the kernels' source is compiled with the host's C++
compiler behind a few lines that play CUDA's part: each block's threads are std::threads
meeting at a std::barrier (`__syncthreads`), `__shared__` memory is one array per kernel
(the blocks run one after another), `threadIdx`, `blockIdx`, `blockDim` are per thread.
An ElementwiseKernel's body runs in a loop over `i`, its array inputs broadcast first.
What this checks: the kernels' arithmetic and indexing (masks' strides, ignored rows, the
heads' layout, the column blocks), not CuPy's calling conventions nor the device's speed.
"""

import ctypes
import hashlib
import re
import subprocess
from pathlib import Path

import numpy as np

CUDA_ON_THREADS = r"""
#include <barrier>
#include <cmath>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>
using std::exp; using std::log; using std::sqrt; using std::tanh;
struct dim3_ { unsigned x, y, z; };
thread_local dim3_ threadIdx, blockIdx, blockDim;
static std::barrier<>* block_barrier;
static void __syncthreads() { block_barrier->arrive_and_wait(); }
static float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
static double __longlong_as_double(long long i) { double f; std::memcpy(&f, &i, 8); return f; }
#define __global__
#define __device__
#define __shared__ static
static void run(int grid, int block, std::function<void()> body) {
    for (int b = 0; b < grid; b++) {
        std::barrier<> here(block);
        block_barrier = &here;
        std::vector<std::thread> threads;
        for (int t = 0; t < block; t++)
            threads.emplace_back([=] {
                threadIdx = {(unsigned)t, 0, 0};
                blockIdx = {(unsigned)b, 0, 0};
                blockDim = {(unsigned)block, 1, 1};
                body();
            });
        for (auto& thread : threads) thread.join();
    }
}
"""
C_TYPES = {"bool": ("bool", ctypes.c_bool), "float32": ("float", ctypes.c_float),
           "float64": ("double", ctypes.c_double), "int64": ("long long", ctypes.c_longlong),
           "int32": ("int", ctypes.c_int)}
NEG_INF = {"float": "__int_as_float(0xff800000)",
           "double": "__longlong_as_double(0xfff0000000000000LL)"}


def compile_library(code, folder):
    """A shared library of `code` in `folder` (compiled once per text)."""
    path = Path(folder) / f"k{hashlib.md5(code.encode()).hexdigest()[:12]}"
    if not path.with_suffix(".so").exists():
        path.with_suffix(".cpp").write_text(code)
        subprocess.run(["g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread",
                        str(path.with_suffix(".cpp")), "-o", str(path.with_suffix(".so"))],
                       check=True, capture_output=True)
    return ctypes.CDLL(str(path.with_suffix(".so")))


def row_kernels(helpers, sources, ctype, folder):
    """call(name, grid, block, *args) for the RawKernels in `sources` (T: ctype)."""
    code = CUDA_ON_THREADS + f"typedef {ctype} T;\n#define NEG_INF {NEG_INF[ctype]}\n" + helpers
    signatures = {}
    for source in sources:
        name, params = re.search(r"void (\w+)\((.*?)\)\s*\{", source, re.S).groups()
        params = [p.strip() for p in params.replace("\n", " ").split(",")]
        names = [p.split()[-1].lstrip("*") for p in params]
        code += source + (f'extern "C" void launch_{name}(int grid, int block, {", ".join(params)})'
                          f' {{ run(grid, block, [=] {{ {name}({", ".join(names)}); }}); }}\n')
        signatures[name] = params
    library = compile_library(code, folder)
    T = {"float": ctypes.c_float, "double": ctypes.c_double}[ctype]

    def call(name, grid, block, *args):
        converted = []
        for param, value in zip(signatures[name], args, strict=True):
            if "*" in param:
                assert value.flags.c_contiguous
                converted.append(ctypes.c_void_p(value.ctypes.data))
            else:
                kind = param.split()[-2] if not param.startswith("long long") else "long long"
                converted.append({"long long": ctypes.c_longlong, "int": ctypes.c_int,
                                  "double": ctypes.c_double, "T": T}[kind](value))
        getattr(library, f"launch_{name}")(ctypes.c_int(grid), ctypes.c_int(block), *converted)
    return call


def elementwise(spec, ctype, args, folder):
    """Run the ElementwiseKernel `spec` = (name, inputs, outputs, body) over the last argument's
    size: args in the kernel's order, outputs last; an array input not `raw` must be the
    output's size already (broadcast it first), a number is a scalar."""
    _, inputs, outputs, body = spec
    params = [(p.split()[0] == "raw", p.split()[-2], p.split()[-1]) for p in inputs.split(",")]
    n_inputs = len(params)
    params += [(False, p.split()[-2], p.split()[-1]) for p in outputs.split(",")]
    T = {"float": ctypes.c_float, "double": ctypes.c_double}[ctype]
    declared, before, after, converted = [], [], [], []
    for k, ((raw, kind, name), value) in enumerate(zip(params, args, strict=True)):
        c_name, c_type = (ctype, T) if kind == "T" else C_TYPES[kind]
        if not isinstance(value, np.ndarray):
            declared.append(f"{c_name} {name}")
            converted.append(c_type(value))
            continue
        declared.append(f"{c_name}* {name}_p")
        converted.append(ctypes.c_void_p(value.ctypes.data))
        if raw:
            before.append(f"{c_name}* {name} = {name}_p;")
        elif k < n_inputs:
            before.append(f"{c_name} {name} = {name}_p[i];")
        else:
            before.append(f"{c_name} {name};")
            after.append(f"{name}_p[i] = {name};")
    code = (f"#include <cmath>\nusing std::tanh;\ntypedef {ctype} T;\n"
            f'extern "C" void run(long long n, {", ".join(declared)}) {{\n'
            f"    for (long long i = 0; i < n; i++) {{ {' '.join(before)} {{ {body} }} "
            f"{' '.join(after)} }}\n}}\n")
    compile_library(code, folder).run(ctypes.c_longlong(args[-1].size), *converted)


def available(folder):
    """Whether the host's g++ compiles the stand-in (C++20's std::barrier)."""
    try:
        compile_library(CUDA_ON_THREADS + 'extern "C" void nothing() {}\n', folder)
    except (OSError, subprocess.CalledProcessError):
        return False
    return True
