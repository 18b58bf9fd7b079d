"""Repository-wide pytest set-up: run the lesson notebooks whenever nbmake is installed.

`pip install -e ".[test]"` brings no nbmake, so `python -m pytest` then runs the tests
alone; with the `notebooks` or `dev` extra it also executes every lesson (as `--nbmake`),
the seven that train, decode or time a model at length (9 to 14 and 17) in the slow pass.
"""


SLOW_LESSONS = ("09_", "10_", "11_", "12_", "13_", "14_", "17_")   # train, decode or time


def pytest_configure(config):
    if config.pluginmanager.hasplugin("nbmake") and hasattr(config.option, "nbmake"):
        config.option.nbmake = True


def pytest_collection_modifyitems(config, items):
    """The lessons that train or decode a model for a while run in the slow pass
    (`-m slow`), as the long training checks do; the others run in the default one."""
    import pytest
    for item in items:
        if item.path.suffix == ".ipynb" and item.path.name.startswith(SLOW_LESSONS):
            item.add_marker(pytest.mark.slow)
