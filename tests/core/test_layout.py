"""The house's layers (docs/design.md): the core stands alone, each layer imports only those
below it (import-linter's contracts in pyproject.toml), and `train` loads no course module.

Sizes are reported, not enforced: the files over 300 lines and the core's line count are
printed (a reason to look, never a reason to move code); no function is over 60 lines."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = ("module", "backend", "errors", "validation", "masks", "losses", "gradcheck",
        "gradcheck_cases", "layers", "models", "optim", "kv_cache", "version")
LONG_FILE = 300         # lines: a file this long is named in the report


# under NUMPY_TRANSFORMER_BACKEND=simulator the backend loads the test stand-in (the one import
# out of the core the contracts allow)
SIMULATOR = ("testing",) if os.environ.get("NUMPY_TRANSFORMER_BACKEND") == "simulator" else ()


def run_python(code, cwd):
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def loaded_outside_core(code, cwd):
    """The package modules outside the core that are loaded after running `code`."""
    out = run_python(code + "\nimport sys\nprint('\\n'.join(m for m in sys.modules if "
                     "m.startswith('numpy_transformer.')))", cwd)
    assert out.returncode == 0, out.stderr
    names = [line.split(".")[1] for line in out.stdout.splitlines()
             if line.startswith("numpy_transformer.")]
    return sorted({n for n in names if n not in CORE + SIMULATOR})


def test_import_contracts_are_kept():
    pytest.importorskip("importlinter")
    out = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command;"
                          " lint_imports_command()"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


def test_the_core_loads_alone(tmp_path):
    code = ("import numpy_transformer\nfrom numpy_transformer.models.transformer import "
            "Transformer\nfrom numpy_transformer.models.gpt import GPT\n"
            "import numpy_transformer.optim, numpy_transformer.losses, numpy_transformer.gradcheck,"
            " numpy_transformer.masks")
    assert loaded_outside_core(code, tmp_path) == []


def test_the_checkpoint_functions_still_come_from_the_package_root(tmp_path):
    out = run_python("import numpy_transformer as nt; print(nt.load_checkpoint.__module__)",
                     tmp_path)
    assert out.stdout.strip().startswith("numpy_transformer.checkpoint"), out.stderr
    out = run_python("import numpy_transformer as nt; nt.nothing_here", tmp_path)
    assert "has no attribute 'nothing_here'" in out.stderr


def test_train_loads_no_course_or_tools_module(tmp_path):
    code = ("from numpy_transformer.cli import main\n"
            "assert main(['train', '--task', 'reverse', '--steps', '2', '--eval-every', '1', "
            "'--no-figures', '--out', 'run']) == 0")
    outside = loaded_outside_core(code, tmp_path)
    assert "training" in outside and "cli" in outside        # the check sees what it should
    assert not {"course", "tools", "testing"} & set(outside), outside


def test_no_function_over_60_lines():
    import ast
    too_long = []
    for path in sorted((ROOT / "numpy_transformer").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > 60:
                    too_long.append(f"{path.relative_to(ROOT)}: {node.name} is {length} lines")
    assert not too_long, too_long


def core_files():
    """What a student reads (docs/design.md, "Reading the core"): every file of the core,
    its __init__.py files and version.py included."""
    package = ROOT / "numpy_transformer"
    files = [path for name in CORE for path in
             ([package / f"{name}.py"] if (package / f"{name}.py").exists()
              else sorted((package / name).glob("*.py")))]
    return files + [package / "__init__.py"]


def lines_of(path):
    return path.read_text(encoding="utf-8").count("\n")


def test_sizes_report(capsys):
    """Prints the core's size and every file over LONG_FILE lines; fails on nothing."""
    files = core_files()
    long_files = [(lines_of(p), p.relative_to(ROOT)) for p in
                  sorted((ROOT / "numpy_transformer").rglob("*.py")) if lines_of(p) > LONG_FILE]
    assert len(files) > 30                                  # the report sees the core
    with capsys.disabled():
        print(f"\nthe core: {sum(map(lines_of, files))} lines in {len(files)} files")
        for count, path in sorted(long_files, reverse=True):
            print(f"  {path}: {count} lines (over {LONG_FILE})")
