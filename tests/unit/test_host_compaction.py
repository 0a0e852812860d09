"""The fragmentation reading of the kernel's free memory (testbed.host.compaction), on buddyinfo texts."""

from __future__ import annotations

import os
from pathlib import Path

from testbed.host.compaction import free_in_large_blocks_gib

# Read off a machine of this project's kind after a day of uptime (2026-12-05), before and after a compaction.
FRAGMENTED = """\
Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3
Node 0, zone    DMA32    208    193    170    283    225    161     79     63     32     16    711
Node 0, zone   Normal  29183  52870  75271  69906  42760  20090   7775   3165   1688    827    350
"""
COMPACTED = """\
Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3
Node 0, zone    DMA32     91     86     77     74     72     72     54     59     33     22    720
Node 0, zone   Normal   7181   6964   6589   5429   3987   2775   1900   1253    749    448   4245
"""


def test_only_blocks_of_2_mib_and_more_count(tmp_path: Path) -> None:
    path = tmp_path / "buddyinfo"
    # One free block of each order from 0 to 10: orders 9 and 10 hold 2 + 4 MiB of 4 KiB pages.
    path.write_text("Node 0, zone   Normal " + " ".join(["1"] * 11) + "\n")
    expected = round((512 + 1024) * os.sysconf("SC_PAGE_SIZE") / 2**30, 1)
    assert free_in_large_blocks_gib(path) == expected


def test_a_compaction_shows_as_more_free_memory_in_large_blocks(tmp_path: Path) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    before.write_text(FRAGMENTED)
    after.write_text(COMPACTED)
    if os.sysconf("SC_PAGE_SIZE") == 4096:
        assert free_in_large_blocks_gib(before) == 5.8
        assert free_in_large_blocks_gib(after) == 20.3
    assert free_in_large_blocks_gib(after) > 3 * free_in_large_blocks_gib(before)


def test_a_kernel_that_does_not_say_is_unknown(tmp_path: Path) -> None:
    assert free_in_large_blocks_gib(tmp_path / "absent") is None
