"""The right bodies of the graded functions, read from the core's own source, never retyped.

    RIGHT[qualname]     the lines between the solution markers of that function in the
                        reference package, as parsed code (`canonical`)
    canonical(code)     code read by Python's parser and written back: comments, blank
                        lines, quotes and spacing in one form; a fragment that does not
                        parse (half a line) is returned as it is

A mistake of the catalogue (mistakes.py) is one change of a right body, found and made in
this canonical form, so the core's layout, comments and quoting never matter: editing a
graded body in the core needs no edit here, and a mistake whose code the core no longer
holds fails loudly when the catalogue is built (tests/course/test_course_rooms.py
reformats a scratch copy of the core and builds, grades and self-tests from it).
"""

import ast
import textwrap
from pathlib import Path

from ..copies.make import PACKAGE, package_regions


def canonical(code):
    """`code` parsed and unparsed (one form for every layout), or as it is if it does not
    parse."""
    try:
        return ast.unparse(ast.parse(textwrap.dedent(code)))
    except SyntaxError:
        return code


def right_bodies(package=PACKAGE):
    """{qualname: canonical body} of every graded function of the package (a numpy_transformer/);
    RuntimeError if a function holds two regions."""
    bodies = {}
    for region in package_regions(package):
        lines = (Path(package) / region.path).read_text(encoding="utf-8").split("\n")
        if region.qualname in bodies:
            raise RuntimeError(f"{region.where}: a second solution region in one function")
        bodies[region.qualname] = canonical("\n".join(lines[region.begin + 1:region.end]))
    return bodies


RIGHT = right_bodies()
