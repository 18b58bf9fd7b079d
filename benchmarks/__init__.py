"""Benchmarks: training-step speed against PyTorch, decoding speed, FLOP counts, profiles.

Run the scripts from the repository root, e.g. `python benchmarks/train_step.py --config small`;
see benchmarks/README.md. The modules are also importable as `benchmarks.<name>` (the tests do).
"""
