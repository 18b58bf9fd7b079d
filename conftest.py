"""Repository-wide pytest set-up: run the lesson notebooks whenever nbmake is installed.

`pip install -e ".[test]"` brings no nbmake, so `python -m pytest` then runs the tests
alone; with the `notebooks` or `dev` extra it also executes every lesson (as `--nbmake`).
"""


def pytest_configure(config):
    if config.pluginmanager.hasplugin("nbmake") and hasattr(config.option, "nbmake"):
        config.option.nbmake = True
