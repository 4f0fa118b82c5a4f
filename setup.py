"""Packages are found, never listed by hand: setuptools' discovery under the four folders that
install as deniable.shared, deniable.client, deniable.aggregator and deniable.relay
(docs/architecture.md, "Installs that work"), so a new subpackage or data folder cannot be left
out of the wheel. Everything else is pyproject.toml.
"""

from setuptools import find_namespace_packages, setup

#: Each folder and the import name it installs as.
ROOTS = {
    "deniable.shared": "shared",
    "deniable.client": "client",
    "deniable.aggregator": "aggregator",
    "deniable.relay": "relay",
}


def packages() -> list[str]:
    """Every package and data folder under the four roots (namespace discovery, so folders of
    templates, static files, catalogs and examples are found like code)."""
    found = []
    for name, folder in ROOTS.items():
        found.append(name)
        subpackages = find_namespace_packages(folder, exclude=["__pycache__", "*.__pycache__"])
        found += [f"{name}.{sub}" for sub in subpackages]
    return found


setup(packages=packages(), package_dir=ROOTS)
