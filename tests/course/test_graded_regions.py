"""The graded regions read as their docstrings' formulas: short, and plain calls only.

Every `# BEGIN SOLUTION <part>` region of the package (the code a student is graded
on) is held to a number of code lines (comments and blank lines not counted, a bound
just above today's textbook form) and may call only

- the module's own parts and methods: anything reached from `self`
  (`self.w_o.backward`, `self.saved_for_backward()`, `self.sublayers[1].exit_backward`);
- the backend's array functions, `xp.<name>`, and `math.sqrt/log/exp` on scalars;
- array methods (`.reshape`, `.swapaxes`, `.astype`, ...) and a module's
  `forward` / `backward` / `reapply` (a dropout or a layer handed in);
- the named drop-ins of layers/fast.py (`fast.sum`, `fast.add_at`, ...), each the
  same as one plain call;
- a few builtins, functions of the region's own file, and the core functions
  listed in CORE_FUNCTIONS.

No call may write into an `out=` buffer: scratch-buffer arithmetic is a fast form,
and a fast form lives outside the graded regions, tested equal to the plain one
(tests/core/test_fast.py, test_optim.py). A failure names the part, the line and the call.
"""

import ast
import shutil
import textwrap

import pytest

from numpy_transformer.course.copies.make import PACKAGE, package_regions
from numpy_transformer.course.copies.strip import drop_fast_forms, fast_forms
from numpy_transformer.layers import fast

BOUNDS = {   # part: the most code lines one of its regions may have
    "linear": 10, "layernorm": 11, "softmax": 1, "gelu": 3, "dropout": 2, "attention": 11,
    "multihead_attention": 5, "mla": 4, "feedforward": 4, "embedding": 3,
    "positional_encoding": 8, "cross_entropy": 8, "adam": 7, "adamw": 1,
    "encoder_stack": 8, "decoder_stack": 12,
}
BUILTINS = {"range", "len", "reversed", "zip", "enumerate", "isinstance", "float", "int",
            "max", "min", "sum", "tuple", "list"}
CORE_FUNCTIONS = {"softmax_backward", "get_default_dtype"}   # imported into a region's file
ARRAY_METHODS = {"reshape", "transpose", "swapaxes", "sum", "mean", "max", "copy", "astype",
                 "ravel", "fill"}
PART_METHODS = {"forward", "backward", "reapply"}
FAST_DROP_INS = {"sum", "mean", "max", "add_at"}
MATH = {"sqrt", "log", "exp"}

REGIONS = package_regions()


def root_name(node):
    """The name an attribute chain starts from: `self` for self.sublayers[1].backward."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def module_functions(path):
    """The names of the functions defined at the top level of the file."""
    tree = ast.parse((PACKAGE / path).read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}


def allowed(func, own):
    """Whether a call of `func` (an ast node) is one a graded region may make."""
    if isinstance(func, ast.Name):
        return func.id in BUILTINS | CORE_FUNCTIONS | own
    if not isinstance(func, ast.Attribute):
        return False
    root = root_name(func)
    if root == "self" or root == "xp":
        return True
    if isinstance(func.value, ast.Name) and root == "fast":
        return func.attr in FAST_DROP_INS
    if isinstance(func.value, ast.Name) and root == "math":
        return func.attr in MATH
    return func.attr in ARRAY_METHODS | PART_METHODS


def region_code(region):
    """(the region's code lines as written, its ast) less the markers and the HINT."""
    lines = (PACKAGE / region.path).read_text(encoding="utf-8").split("\n")
    body = textwrap.dedent("\n".join(lines[region.begin + 1:region.end]))
    code = [line for line in body.split("\n") if line.strip() and not line.strip().startswith("#")]
    return code, ast.parse(body)


def test_every_part_has_a_bound():
    assert {r.part for r in REGIONS} == set(BOUNDS)


@pytest.mark.parametrize("region", REGIONS, ids=lambda r: f"{r.part}-{r.qualname}")
def test_region_is_short(region):
    code, _ = region_code(region)
    assert len(code) <= BOUNDS[region.part], (
        f"{region.where}: {len(code)} code lines, the bound for part {region.part} is "
        f"{BOUNDS[region.part]}: a graded region is the textbook form (a faster form is a "
        "named drop-in outside it)")


@pytest.mark.parametrize("region", REGIONS, ids=lambda r: f"{r.part}-{r.qualname}")
def test_region_calls_only_parts_array_functions_and_drop_ins(region):
    _, tree = region_code(region)
    own = module_functions(region.path)
    wrong = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        line = region.begin + 1 + node.lineno
        if not allowed(node.func, own):
            wrong.append(f"line {line}: calls {ast.unparse(node.func)}")
        if any(k.arg == "out" for k in node.keywords):
            wrong.append(f"line {line}: {ast.unparse(node.func)}(..., out=...) writes a buffer")
    assert not wrong, f"part {region.part}, {region.where}:\n  " + "\n  ".join(wrong)


def test_the_drop_ins_allowed_are_in_layers_fast():
    assert all(callable(getattr(fast, name, None)) for name in FAST_DROP_INS)


def test_the_checker_catches_a_helper_a_loop_buffer_and_an_unknown_drop_in():
    own = {"softmax"}
    for text in ("np.add.at(a, i, v)", "_scatter(a, i, v)", "fast.magic(a)", "helpers.adam(p)",
                 "math.fsum(a)"):
        assert not allowed(ast.parse(text).body[0].value.func, own), text
    for text in ("self.w_o.backward(d)", "xp.sqrt(v)", "fast.add_at(a, i, v)", "x.reshape(-1)",
                 "softmax(x)", "dropout.reapply(a)", "self.sublayers[1].exit_backward(d)"):
        assert allowed(ast.parse(text).body[0].value.func, own), text


def test_a_copy_that_stubs_a_part_holds_no_fast_form_of_it(tmp_path):
    """A fast form (optim/fast.py's adam_update) computes the part's answer: its file says so
    (FAST_FORM_OF), and a student copy that stubs the part leaves the file out; Adam then
    runs its plain update (the student's)."""
    forms = fast_forms(PACKAGE)
    assert forms["optim/fast.py"] == "adam"
    assert {path: part for path, part in forms.items() if path.startswith("layers/fused/")} == {
        "layers/fused/activation.py": "gelu", "layers/fused/linear.py": "linear",
        "layers/fused/loss.py": "cross_entropy", "layers/fused/norm.py": "layernorm",
        "layers/fused/softmax.py": "softmax"}
    for path, part in forms.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PACKAGE / path, tmp_path / path)
        other = "softmax" if part == "linear" else "linear"
        drop_fast_forms(tmp_path, [other])
        assert (tmp_path / path).exists()
        drop_fast_forms(tmp_path, [part])
        assert not (tmp_path / path).exists()
