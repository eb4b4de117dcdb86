#!/usr/bin/env python3
"""Validates config files against configs/marquee.schema.json with the jsonschema package (Draft
2020-12). Prints one JSON object: each file's list of problems (empty: valid), each problem
"path: message". Exits 0.

Usage: schema-check.py SCHEMA FILE...
"""
import json
import sys

from jsonschema import Draft202012Validator


def main():
    schema = json.load(open(sys.argv[1], encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    report = {}
    for path in sys.argv[2:]:
        try:
            config = json.load(open(path, encoding="utf-8"))
        except ValueError as error:
            report[path] = [f"not JSON: {error}"]
            continue
        report[path] = sorted(
            "/".join(str(p) for p in error.absolute_path) + ": " + error.message for error in validator.iter_errors(config))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
