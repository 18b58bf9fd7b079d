"""Test support: a CPU array module as strict as CuPy about host and device."""
