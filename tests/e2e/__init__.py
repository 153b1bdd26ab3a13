"""End-to-end browser tests. A package, so that its conftest is imported as
`e2e.conftest` and never replaces tests/conftest.py as the module `conftest`
(test modules in tests/ do `from conftest import ...`)."""
