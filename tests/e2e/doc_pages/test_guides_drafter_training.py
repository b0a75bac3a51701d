"""docs/guides/drafter-training.md: every command block runs as written and the declared
counts hold (tests/doc_blocks_run.py)."""

import pytest

from tests.doc_blocks_run import PageBlocks

pytestmark = pytest.mark.e2e


class TestPage(PageBlocks):
    PAGE = "docs/guides/drafter-training.md"
