"""The JSON Schema (draft 2020-12) of ``neuronsim.program/1``, built from the code's tables.

``docs/generate.py`` writes it to ``docs/schema/program.schema.json``.  It checks what a schema
can check without the machine or the unrolled program: the shape of every object, key names
(unknown keys are errors; ``x-`` keys are allowed wherever the format allows extensions),
types and enumerations, placement keys per memory and partial placement, ``queue`` only on
DMA ops, and per known op its engines, operand counts and attributes.  It leaves to the
loader (:func:`neuronsim.machine.formats.program_json.load_program`) what needs more: unique names, bounds against
the machine (partitions, bytes, banks, DRAM size), footprints inside their tensors in every
instance, hardware rules on the memories an op touches, the partition-start rule, queues
beyond the machine's count, and dep targets and order.  One difference of number model:
JSON Schema counts ``2.0`` as an integer, the loader wants ``2``.
"""

from __future__ import annotations

from typing import Any

from neuronsim.machine.ir.dtypes import DTYPES
from neuronsim.machine.ir.edges import KIND_NAMES
from neuronsim.machine.ir.extensions import NON_FINITE
from neuronsim.machine.ir.program import SEQUENCERS
from neuronsim.machine.model.optable import COMMON_ATTRS, OP_TABLE
from neuronsim.machine.model.presets import FLOAT_FIGURE_RANGE, MAY_BE_ZERO, OVERRIDABLE, PRESETS

__all__ = ["program_schema", "SCHEMA_ID"]

SCHEMA_ID = "urn:neuronsim:schema:program:1"
_EXT = {"^x-": True}
_NAME = {"type": "string", "minLength": 1}


def _nat(minimum: int = 0) -> dict:
    return {"type": "integer", "minimum": minimum}


def _closed(properties: dict, required: list[str] | None = None, **more: Any) -> dict:
    """An object with exactly these keys, plus ``x-`` extensions."""
    out = {"type": "object", "properties": properties, "patternProperties": _EXT, "additionalProperties": False}
    if required:
        out["required"] = required
    out.update(more)
    return out


def _validator_schema(check) -> dict:
    """The JSON Schema of an op table attribute validator (by its documented meaning)."""
    choices = getattr(check, "choices", None)
    if choices is not None:
        return {"enum": list(choices)}
    # JSON has no infinities: the format writes a non-finite number as one of these strings.
    number = {"oneOf": [{"type": "number"}, {"enum": sorted(NON_FINITE)}]}
    known = {
        "a boolean": {"type": "boolean"},
        "a number": number,
        "an integer": {"type": "integer"},
        "a non-negative integer": _nat(),
        "a non-negative integer below 2**63": {**_nat(), "maximum": 2**63 - 1},
        "a string or integer group id": {"type": ["string", "integer"]},
        # validators of the op table's newer ops (operand tiles and reduction axes)
        'a number (an immediate) or {"read": INDEX} (a [P, 1] tile among the reads)': {"oneOf": [
            {"type": "number"}, {"enum": sorted(NON_FINITE)},
            {"type": "object", "properties": {"read": {"type": "integer"}}, "required": ["read"],
             "additionalProperties": False}]},
        "a free axis (an integer >= 1) or a non-empty list of them": {"oneOf": [
            _nat(1), {"type": "array", "items": _nat(1), "minItems": 1}]},
        "a list of 32 source partitions of a quadrant (integers 0..31, or 255: keep the destination's)": {
            "type": "array", "items": {"oneOf": [{"type": "integer", "minimum": 0, "maximum": 31}, {"const": 255}]},
            "minItems": 32, "maxItems": 32},
        "a positive integer": _nat(1),
        "a list of positive integers (the source's shape, partitions first)": {
            "type": "array", "items": _nat(1), "minItems": 1},
        "a permutation of 0 .. k-1 (the i-th result axis is source axis v[i])": {
            "type": "array", "items": _nat(), "uniqueItems": True},
        "a list of [step, count] pairs (integers, counts >= 1), outermost first": {
            "type": "array", "items": {"type": "array", "prefixItems": [{"type": "integer"}, _nat(1)],
                                       "minItems": 2, "maxItems": 2}},
    }
    doc = (check.__doc__ or "").strip()
    if doc not in known:
        raise ValueError(f"no JSON Schema known for an attribute validator documented as {doc!r}")
    return known[doc]


def _machine() -> dict:
    overrides: dict[str, dict] = {}
    for key, kind in OVERRIDABLE.items():
        if kind is bool:
            overrides[key] = {"type": "boolean"}
        else:
            overrides[key] = ({"type": "integer", "exclusiveMinimum": 0} if kind is int else
                              {"type": "number", "minimum": FLOAT_FIGURE_RANGE[0], "maximum": FLOAT_FIGURE_RANGE[1]})
    for key in MAY_BE_ZERO:  # 0 allowed (no SBUF reserve); its bound by the partition is checked on load
        overrides[key] = {"type": "integer", "minimum": 0}
    overrides["dma_queues"]["maximum"] = 16
    overrides["sbuf_partitions"]["maximum"] = 128
    presets = {"enum": sorted(PRESETS)}
    return {"oneOf": [presets, _closed({"base": presets, **overrides})],
            "description": "a preset name, or a preset with overrides of its parameters (machine/model/presets.py)"}


def _tensor() -> dict:
    def no(*keys: str) -> dict:
        return {"not": {"anyOf": [{"required": [k]} for k in keys]}}

    def memory_is(name: str) -> dict:
        return {"properties": {"memory": {"const": name}}, "required": ["memory"]}

    return _closed(
        {"memory": {"enum": ["dram", "sbuf", "psum"]}, "dtype": {"enum": list(DTYPES)},
         "shape": {"type": "array", "items": _nat(1), "minItems": 1},
         "partition": _nat(), "offset": _nat(), "bank": _nat(), "address": _nat(), "alias": _NAME,
         "role": {"enum": ["input", "output", "internal"]}},
        ["memory", "dtype", "shape"],
        allOf=[
            {"if": memory_is("dram"),
             "then": {"allOf": [no("partition", "offset", "bank"), no_both("address", "alias")]}},
            {"if": memory_is("sbuf"), "then": {"allOf": [no("bank", "address", "alias", "role")],
                                               "dependentRequired": {"partition": ["offset"],
                                                                     "offset": ["partition"]}}},
            {"if": memory_is("psum"), "then": {"allOf": [no("address", "alias", "role")],
                                               "dependentRequired": {"partition": ["bank"], "bank": ["partition"],
                                                                     "offset": ["bank"]}}},
        ])


def no_both(a: str, b: str) -> dict:
    return {"not": {"required": [a, b]}}


def _access() -> dict:
    partitions = {"type": "array", "prefixItems": [_nat(0), _nat(1), _nat(1)], "minItems": 2, "maxItems": 3,
                  "description": "[start, count] or [start, count, step], relative to the tensor's first partition"}
    pair = {"type": "array", "prefixItems": [{"type": "integer"}, _nat(1)], "minItems": 2, "maxItems": 2}
    return _closed(
        {"tensor": _NAME, "partitions": partitions, "offset": _nat(),
         "pattern": {"type": "array", "items": pair, "minItems": 1, "maxItems": 32,
                     "description": "[stride, count] pairs, outermost first (at most 32, walking at most "
                                    "2**40 elements; a negative stride walks down from the offset)"},
         "per_iteration": {"type": "object", "additionalProperties": {"type": "integer"},
                           "description": "loop name -> elements the offset moves per iteration"}},
        ["tensor"], dependentRequired={"per_iteration": ["pattern"]})


def _op_rules() -> list[dict]:
    """One ``if op == NAME then ...`` per known op; opaque ops only check ``cycles``."""
    rules = []
    for name, spec in OP_TABLE.items():
        attrs = {key: _validator_schema(check) for key, check in {**spec.attrs, **COMMON_ATTRS}.items()}
        then = {"properties": {
            "engine": {"enum": list(spec.engines)},
            "reads": {"minItems": spec.reads[0], "maxItems": spec.reads[1]},
            "writes": {"minItems": spec.writes[0], "maxItems": spec.writes[1]},
            "attrs": _closed(attrs)}}
        if spec.reads[0]:
            then["required"] = ["reads"]
        if spec.writes[0]:
            then.setdefault("required", []).append("writes")
        rules.append({"if": {"properties": {"op": {"const": name}}, "required": ["op"]}, "then": then})
    rules.append({"if": {"properties": {"op": {"not": {"enum": list(OP_TABLE)}}}},
                  "then": {"properties": {"attrs": {"properties": {"cycles": _nat()}}}}})
    rules.append({"if": {"properties": {"op": {"not": {"pattern": "^dma"}}}}, "then": {"not": {"required": ["queue"]}}})
    return rules


def _instruction() -> dict:
    dep = _closed({"on": _NAME, "kind": {"enum": sorted(KIND_NAMES.values())}, "loop_carried": {"type": "boolean"}},
                  ["on"])
    return _closed(
        {"name": _NAME, "engine": {"enum": list(SEQUENCERS)}, "op": _NAME,
         "queue": {"type": "string", "pattern": "^dma([0-9]|1[0-5])$",
                   "description": "DMA ops only: the queue that carries out the transfer (default dma0)"},
         "reads": {"type": "array", "items": {"$ref": "#/$defs/access"}},
         "writes": {"type": "array", "items": {"$ref": "#/$defs/access"}},
         "attrs": {"type": "object"},
         "deps": {"type": "array", "items": dep},
         "x-source": _source(),
         "x-nki-accumulate": {"type": "boolean",
                              "description": "traced from `+=` into a tile (NKI frontend)"},
         "x-in-order": {"type": "array", "items": {"type": "array", "items": _nat(0), "minItems": 3, "maxItems": 3},
                        "description": "[run, kept, iteration] of each sequential loop (a legacy kernel's range, "
                                       "an unrolled sequential_range) the trace unrolled around it: the scheduler "
                                       "keeps those iterations in order on each engine"}},
        ["name", "engine", "op"], allOf=_op_rules())


def _source() -> dict:
    """``x-source`` (machine/ir/source.py): the kernel line an instruction was traced from."""
    return {"type": "object", "required": ["file", "line"], "additionalProperties": False,
            "properties": {"file": _NAME, "line": _nat(1), "call": {"type": "string"},
                           "indices": {"type": "object", "additionalProperties": {"type": ["integer", "string"]}}},
            "description": "where the instruction was traced from: file, line, the call, and each loop variable's "
                           "value (or, for a loop the program keeps, the loop's name)"}


def program_schema() -> dict:
    """The whole schema as a JSON-ready dict."""
    loop = _closed({"loop": _NAME, "trip_count": _nat(1), "body": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                    "x-nki-range": {"enum": ["affine", "sequential"],
                                    "description": "an NKI affine_range / sequential_range loop kept as a loop"}},
                   ["loop", "trip_count", "body"])
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "neuronsim.program/1",
        "description": "A program in the neuronsim interchange format (docs/program-format.md). Generated by "
                       "docs/generate.py; the loader (machine/formats/program_json.py) checks more than the "
                       "schema can.",
        **_closed({"format": {"const": "neuronsim.program/1"}, "machine": {"$ref": "#/$defs/machine"},
                   "tensors": {"type": "object", "additionalProperties": {"$ref": "#/$defs/tensor"}},
                   "body": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                  ["format", "body"]),
        "$defs": {
            "machine": _machine(),
            "tensor": _tensor(),
            "access": _access(),
            "instruction": _instruction(),
            "loop": loop,
            "node": {"if": {"type": "object", "required": ["loop"]}, "then": {"$ref": "#/$defs/loop"},
                     "else": {"$ref": "#/$defs/instruction"}},
        },
    }
