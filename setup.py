"""Package layout only (metadata is in pyproject.toml).

The repository keeps the engine's layers as top-level folders; an install puts only
``xform*`` into site-packages, mapping ``interpreters/``, ``primitives/`` and ``lowering/``
to ``xform._src.interpreters`` etc. (``xform/_src/__init__.py`` explains the checkout side).
"""
from setuptools import find_packages, setup

ENGINE = ("interpreters", "primitives", "lowering")

packages = find_packages(include=["xform", "xform.*"])
package_dir = {"": "."}
for layer in ENGINE:
    for pkg in find_packages(include=[layer, layer + ".*"]):
        packages.append("xform._src." + pkg)
    package_dir["xform._src." + layer] = layer

setup(packages=packages, package_dir=package_dir)
