#!/usr/bin/env python3
"""Validates config files against configs/marquee.schema.json with the jsonschema package (Draft
2020-12). Prints one JSON object: each file's list of problems (empty: valid), each problem
"path: message". Exits 0.

Usage: schema-check.py SCHEMA FILE...
       schema-check.py --serve SCHEMA    (reads one file path a line on standard input, answers
                                          each with one line: the JSON list of its problems)
"""
import json
import math
import os
import sys

from jsonschema import Draft202012Validator


def strict_float(text):
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number out of range: {text}")
    return value


def refuse_constant(name):
    raise ValueError(f"{name} is not JSON")


def lone_surrogate(value):
    """The first string (key or value) holding a lone UTF-16 surrogate, which Python's json reads
    but JSON text (RFC 8259 I-JSON, marquee's reader) does not allow."""
    if isinstance(value, str):
        return value if any(0xD800 <= ord(c) <= 0xDFFF for c in value) else None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, item in items:
        found = lone_surrogate(key) if isinstance(key, str) else None
        found = found or lone_surrogate(item)
        if found:
            return found
    return None


def problems(validator, path):
    # Read as strictly as marquee's reader: no NaN/Infinity, no number past a double, no lone surrogate.
    try:
        config = json.load(open(path, encoding="utf-8"), parse_float=strict_float, parse_constant=refuse_constant)
    except (OSError, ValueError) as error:
        return [f"not JSON: {error}"]
    if lone_surrogate(config) is not None:
        return ["not JSON: a string holds a lone UTF-16 surrogate"]
    return sorted("/".join(str(p) for p in error.absolute_path) + ": " + error.message for error in validator.iter_errors(config))


def main():
    serve = sys.argv[1] == "--serve"
    args = sys.argv[2:] if serve else sys.argv[1:]
    schema = json.load(open(args[0], encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    if serve:
        # It lives as long as the test process: a descriptor it inherited by chance (a pipe or
        # socket another test thread opened as it was started) would be held open that long.
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        for line in sys.stdin:
            print(json.dumps(problems(validator, line.rstrip("\n"))), flush=True)
        return
    print(json.dumps({path: problems(validator, path) for path in args[1:]}))


if __name__ == "__main__":
    main()
