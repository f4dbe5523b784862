"""The one thing pyproject.toml cannot say: the packages are found, not listed (every package
under tinylab/), plus widgets/ installed under the name tinylab_widgets (pyproject.toml's
package-dir maps it; its static/ folders of front-end files count as namespace packages, so
setuptools ships their package data without a warning). The rest of the build is pyproject.toml."""
from setuptools import find_namespace_packages, find_packages, setup

WIDGETS = ["tinylab_widgets", *(f"tinylab_widgets.{name}" for name in
                                find_namespace_packages("widgets", exclude=["__pycache__"]))]

setup(packages=[*find_packages(include=["tinylab", "tinylab.*"]), *WIDGETS])
