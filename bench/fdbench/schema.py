"""A small validator for bench/results.schema.json (stdlib only): the JSON
Schema subset that file uses — type (one or a list), properties, required,
additionalProperties (a schema), items, enum, minimum."""
import json
import os

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results.schema.json")

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def load(path=SCHEMA_PATH):
    with open(path) as f:
        return json.load(f)


def check(value, sch, path="$", errors=None):
    """Append 'path: problem' strings to errors (returned)."""
    if errors is None:
        errors = []
    types = sch.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if not any(_TYPES[t](value) for t in types):
            errors.append(f"{path}: expected {' or '.join(types)}, got {type(value).__name__} {str(value)[:60]!r}")
            return errors
    if "enum" in sch and value not in sch["enum"]:
        errors.append(f"{path}: {value!r} not one of {sch['enum']}")
    if "minimum" in sch and _TYPES["number"](value) and value < sch["minimum"]:
        errors.append(f"{path}: {value} < minimum {sch['minimum']}")
    if isinstance(value, dict):
        for k in sch.get("required", []):
            if k not in value:
                errors.append(f"{path}: missing required '{k}'")
        props = sch.get("properties", {})
        extra = sch.get("additionalProperties")
        for k, v in value.items():
            if k in props:
                check(v, props[k], f"{path}.{k}", errors)
            elif isinstance(extra, dict):
                check(v, extra, f"{path}.{k}", errors)
    if isinstance(value, list) and "items" in sch:
        for i, v in enumerate(value):
            check(v, sch["items"], f"{path}[{i}]", errors)
    return errors


def validate(results, path=SCHEMA_PATH):
    """[] when results (a parsed results.json) matches the schema."""
    return check(results, load(path))
