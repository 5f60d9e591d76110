# A package, so that this conftest is imported as tests.conftest and never shadows
# runtime/tests/conftest.py (whose tests import helpers from the module named "conftest").
