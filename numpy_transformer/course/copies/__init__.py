"""Student copies: the package with the chosen parts' solution regions turned into stubs
(make.py, markers.py), their key formulas gone from every sentence of the copy (formulas.py,
meaning.py, strip.py), and the copy installable on its own (installable.py)."""
