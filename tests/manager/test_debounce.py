"""The debounce rule on a driven clock: every ``now`` below is a number the test chooses."""

from __future__ import annotations

import math

import pytest

from langmem_adapters.errors import InvalidArgumentError, InvalidArgumentTypeError
from langmem_adapters.manager.debounce import Debouncer, Job, job_key, portable_config


def job(text: str) -> Job:
    return Job(input=text, config={"configurable": {}}, context=None, store=None)


def test_a_job_is_due_only_once_its_delay_has_passed() -> None:
    d = Debouncer(5)
    d.submit("t", job("a"), now=100.0)
    assert d.take_due(104.999) == []
    assert d.next_deadline() == 105.0
    assert [(k, j.input) for k, j in d.take_due(105.0)] == [("t", "a")]
    assert d.pending == 0 and d.running == 1 and not d.idle


def test_a_new_submission_replaces_the_pending_job_and_restarts_the_wait() -> None:
    d = Debouncer(5)
    d.submit("t", job("a"), now=100.0)
    d.submit("t", job("b"), now=103.0)
    assert d.pending == 1
    assert d.take_due(105.0) == []  # the first deadline no longer holds
    assert [j.input for _, j in d.take_due(108.0)] == ["b"]


def test_a_running_key_gets_no_second_run_until_it_finishes() -> None:
    d = Debouncer(1)
    d.submit("t", job("a"), now=0.0)
    assert len(d.take_due(1.0)) == 1
    d.submit("t", job("b"), now=1.5)
    assert d.next_deadline() is None  # its key runs: nothing could start
    assert d.take_due(10.0) == []
    d.finish("t")
    assert d.next_deadline() == 2.5
    assert [j.input for _, j in d.take_due(10.0)] == ["b"]
    d.finish("t")
    assert d.idle


def test_keys_are_independent_and_a_per_call_delay_overrides_the_default() -> None:
    d = Debouncer(10)
    d.submit("slow", job("s"), now=0.0)
    d.submit("fast", job("f"), now=0.0, delay=2)
    assert d.next_deadline() == 2.0
    assert [k for k, _ in d.take_due(2.0)] == ["fast"]
    assert [k for k, _ in d.take_due(10.0)] == ["slow"]


def test_expedite_makes_every_pending_job_due_and_cancel_drops_them() -> None:
    d = Debouncer(60)
    for key in "abc":
        d.submit(key, job(key), now=0.0)
    assert d.cancel("a") is True
    assert d.cancel("a") is False
    d.expedite()
    assert d.next_deadline() == -math.inf
    assert sorted(k for k, _ in d.take_due(0.0)) == ["b", "c"]
    d.submit("d", job("d"), now=0.0)
    assert d.cancel_all() == 1 and d.pending == 0


@pytest.mark.parametrize("bad", [-1, math.inf, math.nan])
def test_a_delay_out_of_range_is_refused(bad: float) -> None:
    with pytest.raises(InvalidArgumentError):
        Debouncer(bad)
    d = Debouncer(1)
    with pytest.raises(InvalidArgumentError):
        d.submit("t", job("a"), now=0.0, delay=bad)
    assert d.pending == 0


@pytest.mark.parametrize("bad", [True, "5", None])
def test_a_delay_that_is_not_a_number_is_refused(bad: object) -> None:
    with pytest.raises(InvalidArgumentTypeError):
        Debouncer(bad)  # type: ignore[arg-type]


def test_jobs_are_keyed_by_thread_and_keep_only_portable_config() -> None:
    config = portable_config(
        {"configurable": {"thread_id": 7, "__pregel_send": object()}, "callbacks": [print]}
    )
    assert config == {"configurable": {"thread_id": 7}}
    assert job_key(config, "x") == ("thread", "7")
    assert job_key({"configurable": {}}, "x") == ("call", "x")
