"""Transforms by job name: what each reads, how far back, and what it writes.

A transform is a pure function from DataFrames to a DataFrame, called with its inputs as
keyword arguments named as declared. The runner does the IO: it reads each input for the
step's scope (shifted back by the input's window) and writes the result's rows for the
step's scope only."""

from __future__ import annotations

import pkgutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from pyspark.sql import DataFrame

from backfill_orchestrator.errors import UserError
from spark_jobs.engine.tables import Table

TransformFunction = Callable[..., DataFrame]


class UnknownTransformError(UserError, KeyError):
    """A plan names a transform that no one registered."""

    def __str__(self) -> str:
        return str(self.args[0])


class DuplicateTransformError(UserError, ValueError):
    """Two transforms registered under one name."""


@dataclass(frozen=True)
class Input:
    table: Table
    # An output day needs this many earlier input days too (6 for a 7-day window).
    lookback_days: int = 0


@dataclass(frozen=True)
class Transform:
    name: str
    inputs: Mapping[str, Input]
    output: Table
    function: TransformFunction = field(repr=False)

    def apply(self, frames: Mapping[str, DataFrame]) -> DataFrame:
        return self.function(**frames)


class Registry:
    def __init__(self, transforms: Mapping[str, Transform] | None = None):
        self._transforms: dict[str, Transform] = dict(transforms or {})

    def register(
        self, *, name: str, inputs: Mapping[str, Input], output: Table
    ) -> Callable[[TransformFunction], TransformFunction]:
        def decorate(function: TransformFunction) -> TransformFunction:
            self.add(
                Transform(name=name, inputs=MappingProxyType(dict(inputs)), output=output, function=function)
            )
            return function

        return decorate

    def add(self, transform: Transform) -> None:
        if transform.name in self._transforms:
            raise DuplicateTransformError(f"transform {transform.name!r} is registered twice")
        self._transforms[transform.name] = transform

    def copy(self) -> Registry:
        return Registry(self._transforms)

    def __getitem__(self, name: str) -> Transform:
        try:
            return self._transforms[name]
        except KeyError:
            known = ", ".join(sorted(self._transforms)) or "none"
            raise UnknownTransformError(f"unknown transform {name!r} (registered: {known})") from None

    def __contains__(self, name: object) -> bool:
        return name in self._transforms

    def __iter__(self) -> Iterator[Transform]:
        return iter(self._transforms.values())

    @property
    def names(self) -> list[str]:
        return sorted(self._transforms)


class RegistryNotFoundError(UserError):
    """`--registry module:NAME` does not name an importable Registry."""


def load_registry(reference: str) -> Registry:
    """The Registry at `package.module:NAME`, imported only now: the engine imports no pipeline
    it was not asked to run."""
    module, colon, name = reference.partition(":")
    if not (module and colon and name):
        raise RegistryNotFoundError(
            f"{reference!r}: expected module:NAME, e.g. spark_jobs.sample.transforms:FOOD_DELIVERY"
        )
    try:
        found = pkgutil.resolve_name(reference)
    except ImportError as error:
        raise RegistryNotFoundError(f"{reference}: cannot import {module} ({error})") from None
    except AttributeError:
        raise RegistryNotFoundError(f"{reference}: module {module} has no {name}") from None
    except ValueError:
        raise RegistryNotFoundError(f"{reference!r}: not a module:NAME reference") from None
    if not isinstance(found, Registry):
        raise RegistryNotFoundError(
            f"{reference}: names an object of type {type(found).__name__}, not a Registry"
        )
    return found
