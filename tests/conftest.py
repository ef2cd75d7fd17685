"""The suite never reads or writes a user's data home: ``SDC_HOME`` (and the Dagster instance under
it) is a fresh temporary folder for the session, set before any test module imports the code
location (``sdc_dagster.definitions`` loads the specs of the data home at import). Tests that need
their own home set ``SDC_HOME`` themselves."""

import os
import shutil
import tempfile


def pytest_configure(config):
    home = tempfile.mkdtemp(prefix="sdc-test-home-")
    config._sdc_test_home = home
    os.environ["SDC_HOME"] = home
    os.environ.pop("DAGSTER_HOME", None)


def pytest_unconfigure(config):
    shutil.rmtree(getattr(config, "_sdc_test_home", ""), ignore_errors=True)
