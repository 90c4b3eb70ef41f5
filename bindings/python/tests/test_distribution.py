"""The distribution is published as ``loopguard-engine`` (``loopguard`` on PyPI is another
project's), and it provides the import package ``loopguard``."""

from importlib import metadata

import loopguard


def test_distribution_name_and_import_name() -> None:
    dist = metadata.distribution("loopguard-engine")
    assert dist.metadata["Name"] == "loopguard-engine"
    files = [str(f) for f in (dist.files or [])]
    assert any(f.startswith("loopguard/") for f in files), files[:10]
    assert loopguard.__name__ == "loopguard"


def test_no_distribution_claims_the_taken_name() -> None:
    try:
        metadata.distribution("loopguard")
    except metadata.PackageNotFoundError:
        return
    raise AssertionError("a distribution named `loopguard` is installed: the package must not use that name")
