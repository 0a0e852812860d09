"""Errors that testbed reports to users: each says what was wrong and what to do."""


class TestbedError(Exception):
    """Base of every error testbed raises on purpose."""


class ConfigError(TestbedError, ValueError):
    """Bad input, found before anything started."""


class EngineError(TestbedError):
    """No Docker engine answers and none can be started."""


class ImageBuildError(TestbedError):
    """A base or Kafka image could not be built."""


class WaitTimeout(TestbedError, TimeoutError):
    """A wait gave up; the message carries the diagnostics gathered at that moment."""


class WaitAborted(TestbedError):
    """A wait stopped early because what it waited on died; the message says how (status, exit code, log)."""


class NoMemberHistory(TestbedError):
    """No member of a run wrote to its history, so there is nothing to analyse; the message says how each ended."""


class AnalysisServiceError(TestbedError):
    """The analysis service could not be started, or failed in a way that cannot be sent back as it was (a JVM
    error): the message names the error, and the service's own traceback follows it."""
