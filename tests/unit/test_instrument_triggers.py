"""The trigger a commit is recorded with (testbed.instrument.triggers)."""

from __future__ import annotations

import threading

from testbed.instrument.triggers import AsyncCommits, CommitContext


def test_a_commit_is_batch_close_or_revoke_by_where_it_is_made() -> None:
    context = CommitContext()
    assert context.trigger() == "batch"
    with context.inside("close"):
        assert context.trigger() == "close"
        with context.inside("revoke"):  # close() serves a last revoke: its commit is the revoke's
            assert context.trigger() == "revoke"
        assert context.trigger() == "close"
    assert context.trigger() == "batch"


def test_the_context_ends_when_the_callback_raises() -> None:
    context = CommitContext()
    try:
        with context.inside("revoke"):
            raise RuntimeError("the program's callback failed")
    except RuntimeError:
        pass
    assert context.trigger() == "batch"


def test_the_context_is_per_thread() -> None:
    """kafka-python 3 revokes on its IO thread while the program's thread is inside close()."""
    context = CommitContext()
    seen: list[str] = []
    with context.inside("close"):
        worker = threading.Thread(target=lambda: seen.append(context.trigger()))
        worker.start()
        worker.join()
    assert seen == ["batch"]


def test_without_auto_commit_answers_go_to_the_commits_in_order() -> None:
    commits = AsyncCommits(auto_commit=False)
    commits.sent("batch", None)
    commits.sent("revoke", {("t", 0): 5})
    assert commits.answered({("t", 0): 5}) == "batch"  # the oldest: the positions it committed were these
    assert commits.answered({("t", 0): 5}) == "revoke"
    assert commits.answered({("t", 0): 6}) == "batch"  # nothing in flight: still an explicit commit


def test_with_auto_commit_an_answer_nothing_matches_is_an_auto_commit() -> None:
    commits = AsyncCommits(auto_commit=True)
    commits.sent("revoke", {("t", 0): 5})
    assert commits.answered({("t", 0): 9}) == "auto"
    assert commits.answered({("t", 0): 5}) == "revoke"
    assert commits.answered({("t", 0): 5}) == "auto"


def test_an_answer_takes_the_oldest_commit_of_its_offsets() -> None:
    commits = AsyncCommits(auto_commit=True)
    commits.sent("batch", {("t", 0): 5})
    commits.sent("revoke", {("t", 1): 7})
    assert commits.answered({("t", 1): 7}) == "revoke"
    assert commits.answered({("t", 0): 5}) == "batch"


def test_a_commit_that_failed_as_it_was_made_waits_for_no_answer() -> None:
    commits = AsyncCommits(auto_commit=True)
    commits.sent("batch", None)
    commits.withdraw("batch", None)
    assert commits.answered({("t", 0): 1}) == "auto"
