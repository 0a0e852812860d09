"""Spark schemas of the history files, derived from the event models (testbed.history.events).

A file's schema is the union of the fields of the models written to it, so a field added to a model is
read without restating it here; fields an event does not have stay null. Two fields of the same name
must agree on their type.
"""

from __future__ import annotations

from enum import Enum
from types import NoneType, UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pyspark.sql import types as T

from ...history.events import HARNESS_EVENTS, HOST_EVENTS, MEMBER_EVENTS

# Kafka partition ids are int32, as the acks' partitions (sources.read_acks): joins on them want one type.
INT32_FIELDS = frozenset({"partition"})
_SCALARS: dict[Any, T.DataType] = {bool: T.BooleanType(), str: T.StringType(), float: T.DoubleType()}


def spark_type(annotation: Any, field: str) -> T.DataType:
    """The Spark type that reads a field of this annotation from a JSON line."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, UnionType):
        present = [a for a in args if a is not NoneType]
        if len(present) == 1:  # Optional[X]: null is Spark's default anyway
            return spark_type(present[0], field)
    elif origin is Literal and all(isinstance(a, str) for a in args):
        return T.StringType()
    elif origin is list:
        return T.ArrayType(spark_type(args[0], field))
    elif origin is tuple:
        return T.ArrayType(T.StringType())  # a mixed pair such as [topic, partition]: each item read as its text
    elif origin is dict:
        return T.StringType()  # a free-form object, kept as its JSON text (parsed on the driver if needed)
    elif annotation is int:
        return T.IntegerType() if field in INT32_FIELDS else T.LongType()
    elif annotation in _SCALARS:
        return _SCALARS[annotation]
    elif isinstance(annotation, type) and issubclass(annotation, Enum) and issubclass(annotation, str):
        return T.StringType()
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return struct_of((annotation,))
    raise TypeError(f"field {field!r}: no Spark type for {annotation!r}; extend event_schemas.spark_type")


def struct_of(models: tuple[type[BaseModel], ...]) -> T.StructType:
    """Every field of the models, in the order first seen."""
    fields: dict[str, T.DataType] = {}
    for model in models:
        for name, info in model.model_fields.items():
            dtype = spark_type(info.annotation, name)
            if fields.setdefault(name, dtype) != dtype:
                raise TypeError(f"{model.__name__}.{name} is {dtype.simpleString()}, "
                                f"another event's {name} is {fields[name].simpleString()}")
    return T.StructType([T.StructField(name, dtype) for name, dtype in fields.items()])


MEMBER_SCHEMA = struct_of(MEMBER_EVENTS)
HARNESS_SCHEMA = struct_of(HARNESS_EVENTS)
HOST_SCHEMA = struct_of(HOST_EVENTS)
