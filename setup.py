"""The package list, found rather than listed (the metadata and package data are in pyproject.toml).

The top-level folders ``assets/`` and ``resources/`` (the Dagster layer) and ``examples/`` (demo
specs and data) install inside the package as ``sdc_dagster.assets``, ``sdc_dagster.resources`` and
``sdc_dagster/examples`` (``package_dir``), so the wheel adds no generic top-level package to
site-packages; an editable install (``pip install -e .``) maps the same names to the same folders.
Every subpackage of those folders is found, so a new one (``assets/survey/``) needs no edit here.
"""

from setuptools import find_namespace_packages, find_packages, setup

FOLDERS = {"sdc_dagster.assets": "assets", "sdc_dagster.resources": "resources", "sdc_dagster.examples": "examples"}


def packages() -> list[str]:
    """``sdc_dagster`` and its subpackages, then each folder of :data:`FOLDERS` and its subpackages
    under its package name (``examples/`` holds data only: namespace packages)."""
    found = find_packages(include=["sdc_dagster", "sdc_dagster.*"])
    for name, folder in FOLDERS.items():
        find = find_namespace_packages if folder == "examples" else find_packages
        found += [name] + [f"{name}.{sub}" for sub in find(folder, exclude=["__pycache__", "*.__pycache__"])]
    return found


setup(packages=packages(), package_dir=FOLDERS)
