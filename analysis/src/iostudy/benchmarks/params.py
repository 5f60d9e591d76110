"""A check's parameter (:class:`Param`: a ReFrame variable of the check, set by a campaign)
and the JSON-schema forms of its values, with the campaign schema's shared $defs they refer to
(the checks' parameters: :mod:`iostudy.benchmarks.registry`)."""

from __future__ import annotations

from dataclasses import dataclass

#: No default: the check needs the value (ReFrame's variable has none).
NO_DEFAULT = object()
#: "procs_per_node": "system" reaches a check as 0: the partition's cores per node, at most
#: the check's process count, resolved per test case.
PER_NODE_OF_SYSTEM = 0

# ---- the shared $defs of the campaign schema and the value forms built on them ----------------
SHARED_DEFS = {
    "size": {
        "description": "bytes, or KiB/MiB/GiB with a K/M/G suffix",
        "type": "string",
        "pattern": "^[1-9][0-9]*[KMG]?$",
    },
    "power_of_two": {"enum": [1 << k for k in range(17)]},
}
SIZE = {"$ref": "#/$defs/size"}
POWER_OF_TWO = {"$ref": "#/$defs/power_of_two"}
COUNT = {"type": "integer", "minimum": 1}
BOOLEAN = {"type": "boolean"}
SYSTEM = {"const": "system"}
TARGET_NAME = "^[A-Za-z0-9][A-Za-z0-9_.-]*$"  # as a system description's storage targets


def scanned(value: dict, item: dict | None = None) -> dict:
    """A value, or a list of distinct values to scan (each of item's form; by default value's)."""
    items = value if item is None else item
    return {"oneOf": [value, {"type": "array", "minItems": 1, "uniqueItems": True, "items": items}]}


def enum(*values) -> dict:
    return {"enum": list(values)}


# Shared scanned forms, named in the schema's $defs.
SHARED_DEFS["sizes"] = {"description": "a size, or a list of sizes to scan", **scanned(SIZE)}
SHARED_DEFS["positive_counts"] = {
    "description": "a count, or a list of counts to scan",
    **scanned(COUNT),
}
#: a scanned value of these forms refers to its $defs entry
SHARED_FORMS = ((SIZE, "sizes"), (COUNT, "positive_counts"))


@dataclass(frozen=True)
class Param:
    """A check's parameter: a ReFrame variable of the check, set by a campaign."""

    name: str
    type: type  # the ReFrame variable's: str, int, float or bool
    description: str
    value: dict  # the JSON schema of one value
    default: object = NO_DEFAULT
    required: bool = False  # a campaign must give it
    filled: bool = True  # a campaign that omits it gets the default (module docstring)
    scan: bool = True  # a list of values scans it
    item: dict | None = None  # the schema of a scanned list's item, when not that of a value

    def schema(self) -> dict:
        """The parameter's property in the campaign schema."""
        shared = next((name for form, name in SHARED_FORMS if form == self.value), None)
        if not self.scan:
            prop = {"description": self.description, **self.value}
        elif self.item is None and shared:
            prop = {"$ref": f"#/$defs/{shared}", "description": self.description}
        else:
            prop = {"description": self.description, **scanned(self.value, self.item)}
        if self.filled and not self.required and self.default is not NO_DEFAULT:
            prop["default"] = self.default
        return prop

    def reframe_default(self):
        """The default as the check's ReFrame variable holds it."""
        if self.name == "procs_per_node" and self.default == "system":
            return PER_NODE_OF_SYSTEM
        return float(self.default) if self.type is float else self.default
