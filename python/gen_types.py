#!/usr/bin/env python3
"""Writes bpulint/_types.py from docs/report.schema.json: one dataclass per schema
object, fields in schema order, each with a strict from_json (a missing required key,
an unknown key or a wrong type raises SchemaError naming where).

  /usr/bin/python3 python/gen_types.py [--schema SCHEMA] [--out OUT]

The generator understands only the keywords the schema uses and stops on any other,
so a schema change it cannot express fails here instead of producing wrong types.
Conditional constraints (if/then/else, dependentRequired) and string patterns are not
checked by from_json: tests/json validates the CLI's reports against the full schema."""
import argparse
import json
import os
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Keywords that carry no type information (the conditionals are not recursed into).
# pattern too: a string's format is the schema validator's business (tests/json), and a
# pattern that lags the CLI (a team's rule ids) must not make every report unreadable.
IGNORED = {"$schema", "title", "description", "if", "then", "else", "dependentRequired", "pattern"}
ANY_JSON = {"null", "boolean", "number", "string", "array", "object"}


class Unsupported(Exception):
    pass


def camel(name):
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def lit(v):
    """A JSON scalar as Python source (double-quoted strings, True/False)."""
    return json.dumps(v) if isinstance(v, str) else repr(v)


def tuple_src(items):
    return "(" + ", ".join(f'"{x}"' for x in items) + ("," if len(items) == 1 else "") + ")"


def wrap_call(head, args, width=100):
    """head + args + ")" on one line, or one argument per line when too long."""
    line = head + ", ".join(args) + ")"
    if len(line) <= width:
        return [line]
    indent = " " * (len(head) - len(head.lstrip()) + 4)
    out = [head.rstrip()]
    for a in args:
        if len(indent + a) + 1 > width:  # a long tuple: its items packed into lines
            items = " ".join(x.strip() + "," for x in a[1:-1].split(",") if x.strip())
            out += [indent + "("]
            out += textwrap.wrap(items, width, initial_indent=indent + "    ", subsequent_indent=indent + "    ")
            out += [indent + "),"]
        else:
            out.append(indent + a + ",")
    out.append(indent[:-4] + ")")
    return out


class Generator:
    def __init__(self, schema):
        self.schema = schema
        self.defs = schema.get("$defs", {})
        self.classes = []  # (name, schema, where), in discovery order
        self.names = {}    # class name -> id(schema), so two objects never share a name

    def check_keywords(self, s, allowed, where):
        unknown = set(s) - allowed - IGNORED
        if unknown:
            raise Unsupported(f"{where}: keyword(s) {sorted(unknown)} not supported by gen_types.py")

    def add_class(self, name, s, where):
        if name in self.names:
            if self.names[name] != id(s):
                raise Unsupported(f"{where}: class name {name} is taken by another object")
            return name
        self.names[name] = id(s)
        self.classes.append((name, s, where))
        return name

    def type_of(self, s, name_hint, where):
        """(annotation, converter expression) for a schema; converters take (value, at)."""
        if "$ref" in s:
            self.check_keywords(s, {"$ref"}, where)
            ref = s["$ref"]
            prefix = "#/$defs/"
            if not ref.startswith(prefix) or ref[len(prefix):] not in self.defs:
                raise Unsupported(f"{where}: unresolvable $ref {ref}")
            key = ref[len(prefix):]
            target = self.defs[key]
            if target.get("type") == "object" and "properties" in target:
                cls = self.add_class(camel(key), target, f"$defs/{key}")
                return cls, f"{cls}.from_json"
            return self.type_of(target, key, f"$defs/{key}")
        if "const" in s:
            self.check_keywords(s, {"const"}, where)
            return f"Literal[{lit(s['const'])}]", f"_const({lit(s['const'])})"
        if "enum" in s:
            self.check_keywords(s, {"enum"}, where)
            values = ", ".join(lit(v) for v in s["enum"])
            return f"Literal[{values}]", f"_enum({values})"
        if "oneOf" in s:
            self.check_keywords(s, {"oneOf"}, where)
            rest = [alt for alt in s["oneOf"] if alt != {"type": "null"}]
            if len(s["oneOf"]) != 2 or len(rest) != 1:
                raise Unsupported(f"{where}: only oneOf [null, X] is supported")
            ann, conv = self.type_of(rest[0], name_hint, where)
            return f"Optional[{ann}]", f"_nullable({conv})"
        t = s.get("type")
        if isinstance(t, list):
            if set(t) == ANY_JSON:  # any JSON value (a fact): kept as json.loads gave it
                self.check_keywords(s, {"type", "items", "additionalProperties"}, where)
                return "Any", "_any"
            if len(t) == 2 and "null" in t:
                other = dict(s, type=next(x for x in t if x != "null"))
                ann, conv = self.type_of(other, name_hint, where)
                return f"Optional[{ann}]", f"_nullable({conv})"
            raise Unsupported(f"{where}: type {t} not supported")
        if t == "string":
            self.check_keywords(s, {"type"}, where)
            return "str", "_string"
        if t in ("integer", "number"):
            self.check_keywords(s, {"type", "minimum"}, where)
            minimum = f"minimum={lit(s['minimum'])}" if "minimum" in s else ""
            return ("int" if t == "integer" else "float"), f"_{t}({minimum})"
        if t == "boolean":
            self.check_keywords(s, {"type"}, where)
            return "bool", "_boolean"
        if t == "array":
            self.check_keywords(s, {"type", "items", "maxItems"}, where)
            ann, conv = self.type_of(s.get("items", {}), name_hint, where + ".items")
            return f"List[{ann}]", f"_list({conv})"
        if t == "object":
            if "properties" in s:
                self.check_keywords(s, {"type", "properties", "required", "additionalProperties"}, where)
                if s.get("additionalProperties") is not False:
                    raise Unsupported(f"{where}: objects with properties must have additionalProperties: false")
                cls = self.add_class(camel(name_hint), s, where)
                return cls, f"{cls}.from_json"
            self.check_keywords(s, {"type", "additionalProperties"}, where)
            ann, conv = self.type_of(s["additionalProperties"], name_hint, where + ".additionalProperties")
            return f"Dict[str, {ann}]", f"_dict({conv})"
        raise Unsupported(f"{where}: schema {json.dumps(s)[:80]} not supported")

    def render_class(self, name, s, where):
        required = s.get("required", [])
        props = s["properties"]
        missing = [r for r in required if r not in props]
        if missing:
            raise Unsupported(f"{where}: required {missing} not in properties")
        out = ["", "", "@dataclass(kw_only=True)", f"class {name}:"]
        doc = s.get("title") or s.get("description") or f"``{where}`` of the report schema."
        out += [f'    """{line}' if i == 0 else f"    {line}"
                for i, line in enumerate(textwrap.wrap(doc, 92))]
        out[-1] += '"""'
        out.append("")
        args = []
        for key, p in props.items():
            ann, conv = self.type_of(p, key, f"{where}.{key}")
            note = p.get("description", "")
            if key not in required and ann.startswith("Optional["):  # absent and null read alike
                note += (" " if note else "") + "(None both when absent and when null.)"
            out += [f"    #: {line}" for line in textwrap.wrap(note, 90)]
            if key in required:
                out.append(f"    {key}: {ann}")
                args.append(f'            {key}=_get(d, "{key}", at, {conv}),')
            else:
                opt = ann if ann.startswith("Optional[") else f"Optional[{ann}]"
                out.append(f"    {key}: {opt} = None")
                args.append(f'            {key}=_opt(d, "{key}", at, {conv}),')
        out += [
            "",
            "    @classmethod",
            f'    def from_json(cls, d: Any, at: str = "{name}") -> "{name}":',
            *wrap_call("        _object(d, at, ", [tuple_src(required), tuple_src(props)]),
            "        return cls(",
            *args,
            "        )",
        ]
        return out

    def render(self, schema_name):
        self.add_class("Report", self.schema, "report")
        body = []
        i = 0
        while i < len(self.classes):  # rendering a class may discover more
            body += self.render_class(*self.classes[i])
            i += 1
        head = HEADER.format(schema=schema_name)
        return head + RUNTIME + "\n".join(body) + "\n"


HEADER = '''\
# Generated by python/gen_types.py from {schema}: do not edit.
# Regenerate: /usr/bin/python3 python/gen_types.py (ctest python_types_fresh fails when stale).
"""The bpu-lint JSON report (version 1) as dataclasses, field for field.

Every object of the schema is a class with a strict ``from_json``: a missing required
key, an unknown key or a value of the wrong type raises SchemaError. A key the schema
makes optional is None when absent. Conditionals (if/then/else, dependentRequired)
and string patterns are left to the schema itself.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Literal, Optional
'''

RUNTIME = '''

class SchemaError(ValueError):
    """The JSON does not follow the report schema; the message names where."""


Conv = Callable[[Any, str], Any]


def _object(d: Any, at: str, required: tuple, allowed: tuple) -> None:
    if not isinstance(d, dict):
        raise SchemaError(f"{at}: expected an object, got {type(d).__name__}")
    for key in required:
        if key not in d:
            raise SchemaError(f"{at}: missing key {key!r}")
    for key in d:
        if key not in allowed:
            raise SchemaError(f"{at}: unknown key {key!r}")


def _get(d: dict, key: str, at: str, conv: Conv) -> Any:
    return conv(d[key], f"{at}.{key}")


def _opt(d: dict, key: str, at: str, conv: Conv) -> Any:
    """An optional key: None when absent."""
    return conv(d[key], f"{at}.{key}") if key in d else None


def _same(v: Any, c: Any) -> bool:
    return type(v) is type(c) and v == c  # so True is not 1


def _const(c: Any) -> Conv:
    def conv(v: Any, at: str) -> Any:
        if not _same(v, c):
            raise SchemaError(f"{at}: expected {c!r}, got {v!r}")
        return v
    return conv


def _enum(*values: Any) -> Conv:
    def conv(v: Any, at: str) -> Any:
        if not any(_same(v, c) for c in values):
            raise SchemaError(f"{at}: {v!r} is not one of {list(values)!r}")
        return v
    return conv


def _nullable(inner: Conv) -> Conv:
    return lambda v, at: None if v is None else inner(v, at)


def _string(v: Any, at: str) -> str:
    if not isinstance(v, str):
        raise SchemaError(f"{at}: expected a string, got {type(v).__name__}")
    return v


def _number_check(v: Any, at: str, kinds: tuple, what: str, minimum: Optional[float]) -> Any:
    if isinstance(v, bool) or not isinstance(v, kinds):
        raise SchemaError(f"{at}: expected {what}, got {type(v).__name__}")
    if minimum is not None and v < minimum:
        raise SchemaError(f"{at}: {v!r} is below {minimum!r}")
    return v


def _integer(minimum: Optional[int] = None) -> Conv:
    return lambda v, at: _number_check(v, at, (int,), "an integer", minimum)


def _number(minimum: Optional[float] = None) -> Conv:
    return lambda v, at: _number_check(v, at, (int, float), "a number", minimum)


def _boolean(v: Any, at: str) -> bool:
    if not isinstance(v, bool):
        raise SchemaError(f"{at}: expected a boolean, got {type(v).__name__}")
    return v


def _any(v: Any, at: str) -> Any:
    return v


def _list(item: Conv) -> Conv:
    def conv(v: Any, at: str) -> list:
        if not isinstance(v, list):
            raise SchemaError(f"{at}: expected an array, got {type(v).__name__}")
        return [item(x, f"{at}[{i}]") for i, x in enumerate(v)]
    return conv


def _dict(value: Conv) -> Conv:
    def conv(v: Any, at: str) -> dict:
        if not isinstance(v, dict):
            raise SchemaError(f"{at}: expected an object, got {type(v).__name__}")
        return {k: value(x, f"{at}[{k!r}]") for k, x in v.items()}
    return conv
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schema", default=os.path.join(ROOT, "docs", "report.schema.json"))
    ap.add_argument("--out", default=os.path.join(HERE, "bpulint", "_types.py"))
    args = ap.parse_args()
    try:
        with open(args.schema, encoding="utf-8") as f:
            schema = json.load(f)
        text = Generator(schema).render("docs/report.schema.json")
    except (OSError, ValueError, Unsupported) as e:
        sys.exit(f"gen_types.py: {args.schema}: {e}")
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
