"""``pytest_triton.servers.server`` (the launcher how-to's old import path) hands out the new names, warning."""

from __future__ import annotations

import pytest

from pytest_triton.servers import base
from pytest_triton.servers import wait


def test_the_old_module_warns_and_gives_the_new_names() -> None:
    from pytest_triton.servers import server

    with pytest.warns(DeprecationWarning, match=r"servers\.server\.Budget moved: import .*servers\.wait\.Deadline"):
        assert server.Budget is wait.Deadline
    with pytest.warns(DeprecationWarning, match=r"servers\.base\.ServerBase"):
        assert server.ServerBase is base.ServerBase
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        _ = server.Nothing
