"""The one reader of ``module:attr`` names (outlast/importing.py): probes, compensations,
credential providers and graphs in importable modules all go through it."""

from __future__ import annotations

import json
import os.path

import pytest

from outlast.importing import Unresolvable, resolve


def test_a_name_resolves_to_the_object_it_names() -> None:
    assert resolve("json:dumps") is json.dumps
    assert resolve("os.path:join") is os.path.join
    assert resolve("json:JSONDecoder.decode") is json.JSONDecoder.decode  # a dotted qualname


@pytest.mark.parametrize(
    ("name", "underneath"),
    [
        ("no_such_module_here:thing", ModuleNotFoundError),
        ("json:no_such_attribute", AttributeError),
        ("json:dumps:twice", ValueError),
    ],
)
def test_whatever_goes_wrong_is_one_error_that_says_what(
    name: str, underneath: type[Exception]
) -> None:
    with pytest.raises(Unresolvable, match=name) as raised:
        resolve(name)
    assert isinstance(raised.value.__cause__, underneath)
    assert isinstance(raised.value, ImportError)  # callers that caught ImportError still do
