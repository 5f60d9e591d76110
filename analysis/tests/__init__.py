# A package, so that its conftest is imported as tests.conftest and never shadows
# runtime/tests/conftest.py; tests import shared helpers from modules (tests.testdata, ...),
# never from a conftest.
