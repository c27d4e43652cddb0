"""The schemas check_json_schema.py compares the grammar and Python on. A case: name, schema,
optional samples (values to spell and mutate besides the generated ones), texts (extra texts),
order_schema (the property order to check, when allOf or anyOf siblings make the schema's own
per-part order not the merged one). ERROR_CASES: schemas the converter must refuse, with
substrings the message must hold. random_case(): a random schema of the kinds the oracle
decides exactly (no allOf over objects, no anyOf beside object keywords). texts_for(): the texts
to compare on for a case: values generated from the schema, spelled with random whitespace (mostly
allowed runs, now and then rejected ones) and strings (listed keys and enum/const strings mostly
canonical, free strings in any spelling), mutations of them, random values."""
import decimal
import json
import re

NODE = {"type": "object",
        "properties": {"v": {"type": "integer", "minimum": -3, "maximum": 3},
                       "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 3}},
        "required": ["v"], "additionalProperties": False}


def pattern(p, samples, texts=()):
    return {"name": f"pattern {p}", "schema": {"type": "string", "pattern": p}, "samples": samples,
            "texts": list(texts)}


def fmt(f, samples):
    return {"name": f"format {f}", "schema": {"type": "string", "format": f}, "samples": samples}


CASES = [
    {"name": "strict object",
     "schema": {"type": "object",
                "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                               "tags": {"type": "array", "items": {"type": "string"}}},
                "required": ["name", "age", "tags"], "additionalProperties": False},
     "texts": ['{"name":"x","age":1,"tags":[]}', '{"age":1,"name":"x","tags":[]}',
               '{"n\\u0061me":"x","age":1,"tags":["\\ud83d\\ude00"]}',
               '{"name":"\\u0078","age":1,"tags":["\\ud83d\\ude00"]}', '{"\\u0063ity":"x","age":1,"tags":[]}',
               '{"name":"x","age":1.0,"tags":[]}',
               '{"name":"x","age":1,"tags":[],"name":"y"}']},
    {"name": "optional properties, extras allowed",
     "schema": {"type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
                "required": ["b"]},
     "texts": ['{"b":""}', '{"a":1,"b":"","c":true,"d":null}', '{"d":null,"b":""}', '{"b":"","\\u0061":1}',
               '{"c":true,"b":""}', '{"b":"","c":false,"zz":[1]}']},
    {"name": "all optional, no extras",
     "schema": {"type": "object", "properties": {"a": {"type": "null"}, "b": {"type": "null"}, "c": {"type": "null"}},
                "additionalProperties": False},
     "texts": ["{}", '{"a":null}', '{"c":null}', '{"a":null,"c":null}', '{"b":null,"a":null}', '{"d":null}',
               '{ }', '{,}', '{"a":null,}']},
    {"name": "additionalProperties schema",
     "schema": {"type": "object", "properties": {"x": {"type": "number"}},
                "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 9}},
     "texts": ['{"x":1.5,"y":3}', '{"y":3}', '{"x":1,"x2":10}', '{"\\u0078":2}', '{"y":3,"x":1}']},
    {"name": "required beyond properties",
     "schema": {"type": "object", "required": ["id", "b"], "additionalProperties": {"type": "string", "maxLength": 3}},
     "texts": ['{"id":"a","b":""}', '{"b":"","id":"a"}', '{"id":"a"}', '{"id":"a","b":"","c":"ccc"}',
               '{"id":"abcd","b":""}']},
    {"name": "properties without type",
     "schema": {"properties": {"a": {"const": 1}}},
     "texts": ['{"a":1}', '{"a":2}', "3", '"s"', "[]", '{"b":2}', '{"a":1.0}']},
    {"name": "keys with escapes and astral characters",
     "schema": {"type": "object",
                "properties": {"é": {"type": "integer"}, "a\"b": {"type": "null"}, "😀": {"type": "boolean"}},
                "required": ["é"]},
     "texts": ['{"\\u00e9":1}', '{"\\u00E9":1,"a\\"b":null}', '{"é":1,"a\\"b":null}', '{"é":1,"a\\u0022b":null}',
               '{"é":1,"\\ud83d\\ude00":true}', '{"é":1,"😀":true}', '{"é":1,"\\uD83D\\uDE00":true}',
               '{"é":1,"😀":true,"e":0}', '{"é":1,"😀":true,"\\u0065":0}', '{"é":1,"\\u00e9":2}']},
    {"name": "fixed strings that need escapes",
     "schema": {"type": "object",
                "properties": {"a/b": {"enum": ["x/y", "q\"\\", "t\tn\nb\bf\fr\r", "\u0001\u001f\u001b", "\u007f\u2028",
                                                 "😀", ""]},
                               "k\u001b": {"const": {"c\r": ["\b\f", "/"]}},
                               "é\"\n": {"type": "string"}},
                "required": ["a/b"], "additionalProperties": {"type": "integer"}},
     "texts": ['{"a/b":"x/y"}', '{"a\\/b":"x/y"}', '{"a/b":"x\\/y"}', '{"a/b":"q\\"\\\\"}', '{"a/b":"q\\u0022\\\\"}',
               '{"a/b":"t\\tn\\nb\\bf\\fr\\r"}', '{"a/b":"t\\u0009n\\nb\\bf\\fr\\r"}',
               '{"a/b":"\\u0001\\u001f\\u001b"}', '{"a/b":"\\u0001\\u001F\\u001b"}',
               '{"a/b":"\u007f\u2028"}', '{"a/b":"\\u007f\u2028"}', '{"a/b":"\u007f\\u2028"}',
               '{"a/b":"😀"}', '{"a/b":"\\ud83d\\ude00"}', '{"a/b":""}',
               '{"a/b":"","k\\u001b":{"c\\r":["\\b\\f","/"]}}', '{"a/b":"","k\\u001B":{"c\\r":["\\b\\f","/"]}}',
               '{"a/b":"","k\\u001b":{"c\\u000d":["\\b\\f","/"]}}', '{"a/b":"","k\\u001b":{"c\\r":["\\b\\f","\\/"]}}',
               '{"a/b":"","é\\"\\n":"\\u00e9\\/"}', '{"a/b":"","\\u00e9\\"\\n":"x"}', '{"a/b":"","a\\/b":1}',
               '{"a/b":"","a\\/c":1}']},
    {"name": "items bounded",
     "schema": {"type": "array", "items": {"type": "integer", "minimum": -5, "maximum": 5}, "minItems": 1,
                "maxItems": 4},
     "texts": ["[]", "[0]", "[1,2,3,4]", "[1,2,3,4,5]", "[6]", "[-5, 5]", "[ 1 , 2 ]"]},
    {"name": "tuple closed",
     "schema": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
     "texts": ["[]", '["a"]', '["a",1]', '["a",1,2]', "[1]"]},
    {"name": "tuple then items",
     "schema": {"type": "array", "prefixItems": [{"type": "boolean"}], "items": {"type": "null"}, "minItems": 2,
                "maxItems": 3},
     "texts": ["[true]", "[true,null]", "[false,null,null]", "[false,null,null,null]", "[null,null]"]},
    {"name": "tuple, any rest",
     "schema": {"type": "array", "prefixItems": [{"const": "x"}]},
     "texts": ["[]", '["x"]', '["x",1,{}]', '["y"]']},
    {"name": "string lengths",
     "schema": {"type": "string", "minLength": 2, "maxLength": 4},
     "texts": ['"ab"', '"a"', '"abcd"', '"abcde"', '"\\u00e9\\n"', '"😀😀"', '"\\ud83d\\ude00x"', '"\\ud83d"']},
    {"name": "empty string only", "schema": {"type": "string", "maxLength": 0}, "texts": ['""', '"a"']},
    {"name": "enum of mixed values",
     "schema": {"enum": ["red", "grün", 1, 2.5, None, True, [1, "a"], {"k": "v", "a": []}]},
     "texts": ['"red"', '"r\\u0065d"', '"grün"', '"gr\\u00fcn"', '[1,"\\u0061"]', '{"\\u006b":"v","a":[]}',
               "1", "1.0", "2.5", "2.50", "null", "true", "false",
               '[1,"a"]', '[ 1 , "a" ]', '{"k":"v","a":[]}', '{"a":[],"k":"v"}']},
    {"name": "const object", "schema": {"const": {"a": 1, "b": [True, None]}},
     "texts": ['{"a":1,"b":[true,null]}', '{"b":[true,null],"a":1}', '{"a":1}']},
    {"name": "enum filtered by type", "schema": {"type": "string", "enum": ["a", 1, "b"]},
     "texts": ['"a"', "1", '"b"', '"c"']},
    {"name": "integer range", "schema": {"type": "integer", "minimum": -150, "maximum": 150},
     "texts": [str(i) for i in range(-160, 161)] + ["-0", "00", "01", "-01", "+1", "1.0", "1e2", "-"]},
    {"name": "integer exclusive float bounds",
     "schema": {"type": "integer", "exclusiveMinimum": -12.5, "exclusiveMaximum": 99},
     "texts": [str(i) for i in range(-20, 110)]},
    {"name": "integer one-sided", "schema": {"type": "integer", "minimum": 7},
     "texts": [str(i) for i in range(-20, 120)] + ["1000000000000000000000"]},
    {"name": "integer negative only", "schema": {"type": "integer", "exclusiveMaximum": -3},
     "texts": [str(i) for i in range(-120, 20)] + ["-100000000000000000000"]},
    {"name": "integer huge bounds",
     "schema": {"type": "integer", "minimum": 1e20, "maximum": 18446744073709551615e10},
     "texts": ["99999999999999999999", "100000000000000000000", "184467440737095516150000000000",
               "184467440737095516150000000001", "1844674407370955161500000000000"]},
    {"name": "integer at uint64", "schema": {"type": "integer", "maximum": 18446744073709551615, "minimum": -9223372036854775808},
     "texts": ["18446744073709551615", "18446744073709551616", "-9223372036854775808", "-9223372036854775809"]},
    {"name": "number >= 0", "schema": {"type": "number", "minimum": 0},
     "texts": ["0", "-0", "-0.0", "-0e5", "-0.001", "0.001", "1e-400", "-1e-400", "5", "-5", "0.0e-0"]},
    {"name": "number > 0", "schema": {"type": "number", "exclusiveMinimum": 0},
     "texts": ["0", "-0", "0.0", "0.000", "0.001", "1e-400", "0e5", "0.10", "-1", "7"]},
    {"name": "number <= 0", "schema": {"type": "number", "maximum": 0},
     "texts": ["0", "-0", "0.0", "0.001", "-1e-400", "-7.5", "1"]},
    {"name": "number < 0", "schema": {"type": "number", "exclusiveMaximum": 0},
     "texts": ["0", "-0", "-0.0", "-0.001", "-1e-400", "1"]},
    {"name": "number == 0", "schema": {"type": "number", "minimum": 0, "maximum": 0.0},
     "texts": ["0", "-0", "0.00", "-0.0E+3", "0.1", "-0.1"]},
    {"name": "number syntax", "schema": {"type": "number"},
     "texts": ["0", "-0", "01", "1.", ".5", "1.5e", "1e+", "1E-7", "-1.25e+10", "+1", "0x10", "NaN", "Infinity",
               "1e400", "00.1", "1.0e01"]},
    {"name": "type list with string length", "schema": {"type": ["string", "null"], "maxLength": 2},
     "texts": ['"ab"', '"abc"', "null", "1"]},
    {"name": "type list with bounds", "schema": {"type": ["integer", "boolean"], "minimum": 3},
     "texts": ["3", "2", "true", "null", "3.5"]},
    {"name": "anyOf", "schema": {"anyOf": [{"type": "string", "pattern": "^a"}, {"type": "integer", "maximum": 0}]},
     "texts": ['"a"', '"ba"', "0", "1", "-5"]},
    {"name": "oneOf overlapping (as anyOf)",
     "schema": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]},
     "texts": ["1", "-1", "1.5", "-1.5"]},
    {"name": "anyOf with siblings",
     "schema": {"type": "object", "properties": {"kind": {"enum": ["a", "b"]}}, "required": ["kind"],
                "anyOf": [{"properties": {"n": {"type": "integer"}}, "required": ["n"]},
                          {"properties": {"s": {"type": "string"}}}]},
     "order_schema": {"anyOf": [{"properties": {"kind": {}, "n": {}}, "required": ["kind", "n"]},
                                {"properties": {"kind": {}, "s": {}}, "required": ["kind"]}]},
     "texts": ['{"kind":"a","n":1}', '{"kind":"a"}', '{"kind":"b","s":"x"}', '{"n":1,"kind":"a"}',
               '{"kind":"a","n":1,"z":0}']},
    {"name": "allOf numbers", "schema": {"allOf": [{"type": "integer", "minimum": 0}, {"maximum": 10}]},
     "texts": [str(i) for i in range(-3, 14)]},
    {"name": "allOf objects",
     "schema": {"$defs": {"base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
                "allOf": [{"$ref": "#/$defs/base"},
                          {"properties": {"id": True, "name": {"type": "string"}}, "additionalProperties": False}]},
     "order_schema": {"properties": {"id": {}, "name": {}}, "required": ["id"]},
     "texts": ['{"id":1}', '{"id":1,"name":"x"}', '{"name":"x"}', '{"id":1,"z":2}', '{"name":"x","id":1}']},
    {"name": "$ref tree", "schema": {"$defs": {"node": NODE}, "$ref": "#/$defs/node"},
     "texts": ['{"v":1}', '{"v":1,"kids":[{"v":2,"kids":[]},{"v":-3}]}', '{"v":1,"kids":[{"v":4}]}',
               '{"v":1,"kids":[{"kids":[]}]}']},
    {"name": "$ref list",
     "schema": {"definitions": {"list": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {
         "head": {"type": "integer"}, "tail": {"$ref": "#/definitions/list"}}, "required": ["head", "tail"],
         "additionalProperties": False}]}}, "$ref": "#/definitions/list"},
     "texts": ["null", '{"head":1,"tail":null}', '{"head":1,"tail":{"head":2,"tail":null}}', '{"head":1}']},
    {"name": "$ref to the root",
     "schema": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"$ref": "#"}]}, "maxItems": 2},
     "texts": ["[]", "[[]]", "[1,[2,[[]]]]", "[1,2,3]", "[[1,2,3]]"]},
    {"name": "$ref with siblings", "schema": {"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s", "maxLength": 3},
     "texts": ['"abc"', '"abcd"', "1"]},
    {"name": "any value", "schema": {}, "texts": ["1", "[]", '{"a":[{}]}', "nul", '"x']},
    {"name": "true schema", "schema": True, "texts": ["null", "{}", "[1,"]},
    {"name": "annotations ignored",
     "schema": {"title": "T", "description": "d", "$schema": "https://json-schema.org/draft/2020-12/schema",
                "$id": "x", "default": 1, "examples": [1], "$comment": "c", "deprecated": False,
                "readOnly": False, "writeOnly": False, "type": "boolean"},
     "texts": ["true", "1"]},
    {"name": "nested",
     "schema": {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object", "properties": {
         "sku": {"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"}, "qty": {"type": "integer", "minimum": 1},
         "unit": {"enum": ["kg", "pcs"]}}, "required": ["sku", "qty"], "additionalProperties": False}}},
         "required": ["items"], "additionalProperties": False},
     "samples": [{"items": [{"sku": "AB-123", "qty": 2, "unit": "kg"}, {"sku": "ZZ-000", "qty": 1}]}],
     "texts": ['{"items":[{"sku":"ab-123","qty":1}]}', '{"items":[{"sku":"AB-12","qty":1}]}']},
    pattern("^[a-z]+\\d{2,3}$", ["ab12", "x123", "z9999", "12"]),
    pattern("ab|^c", ["xxab", "cd", "dc", "ba", "a\\u0062"], ['"x\\u0061b"']),
    pattern("^(ab)*c?$", ["", "ab", "ababc", "abca", "c"]),
    pattern("\\s", ["a b", "ab", "\u2028", "\u00a0", "\t"]),
    pattern("^(?:x|y)+$", ["x", "xyyx", "", "xz"]),
    pattern("^.{2}$", ["ab", "a\n", "😀é", "abc", "\r\r"]),
    pattern("é+", ["é", "aéb", "e"]),
    pattern("^\\u00e9?[\\u0100-\\u017f]*$", ["", "éĀſ", "ſé", "ƀ"]),
    pattern("colou?r", ["color", "colour", "colouur"]),
    pattern("^\\$\\d+(\\.\\d{2})?$", ["$5", "$5.00", "$5.0", "5"]),
    pattern("^a{2,}$", ["a", "aa", "aaaaa"]),
    pattern("^(a|)+$", ["", "a", "aaa", "b"]),
    pattern("^(a*b?)*$", ["", "ab", "bba", "c"]),
    pattern("^[\\-\\]x]$", ["-", "]", "x", "\\"]),
    pattern("^[^a-c\"]*$", ["xyz", "a", "\"", "\\"]),
    pattern("^\\w+@\\w+\\.com$", ["a@b.com", "a@b.org", "é@b.com"]),
    pattern("^(?<year>\\d{4})-\\D$", ["2024-x", "2024-1"]),
    pattern("^[\\d\\s]+$", ["1 2", "12", "a"]),
    pattern("^\\S\\W$", ["a!", "ab", " !"]),
    pattern("x*?y{1,2}?", ["y", "xxyy", "x"]),
    pattern("^[😀-😂]$", ["😀", "😁", "😃"]),
    fmt("date", ["2024-02-29", "2023-02-29", "2000-02-29", "1900-02-29", "0000-02-29", "2024-04-31", "2024-12-31",
                 "2024-13-01", "2024-00-10", "24-01-01", "2024-1-01"]),
    fmt("time", ["23:59:60Z", "24:00:00Z", "12:00:00", "12:00:00.123+05:30", "12:00:00z", "12:00:00-24:00",
                 "12:60:00Z", "12:00:00.Z"]),
    fmt("date-time", ["2024-02-29T23:59:59Z", "2024-02-29t23:59:59.5+01:00", "2024-02-29 23:59:59Z",
                      "2023-02-29T00:00:00Z"]),
    fmt("uuid", ["123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000",
                 "123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400g"]),
]

ERROR_CASES = [
    ("patternProperties", {"type": "object", "properties": {"a": {"type": "object", "patternProperties": {}}}},
     ["unsupported keyword 'patternProperties'", "at $.properties.a"]),
    ("format email", {"properties": {"m": {"type": "string", "format": "email"}}},
     ["format 'email'", "at $.properties.m"]),
    ("minItems -1", {"type": "array", "minItems": -1}, ["minItems", "at $"]),
    ("minimum > maximum", {"type": "integer", "minimum": 5, "maximum": 4}, ["minimum", "at $"]),
    ("missing $ref", {"items": {"$ref": "#/$defs/nope"}}, ["'#/$defs/nope' not found", "at $.items"]),
    ("number bound", {"type": "number", "minimum": 5}, ["'minimum' 5", "not enforced"]),
    ("lookahead", {"type": "string", "pattern": "a(?=b)"}, ["lookaround", "at $"]),
    ("left recursion", {"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}}, "$ref": "#/$defs/a"},
     ["#/$defs/a"]),
    ("allOf contradiction",
     {"allOf": [{"properties": {"id": {}}, "required": ["id"]}, {"additionalProperties": False}]},
     ["required property 'id' admits no value"]),
    ("multipleOf", {"anyOf": [{"type": "integer", "multipleOf": 3}]}, ["'multipleOf'", "at $.anyOf[0]"]),
]


# --- random schemas ---

NAMES = ["a", "b", "c", "id", "é", "a/\t"]


def random_scalar(rng):
    r = rng.random()
    if r < 0.25:
        s = {"type": "integer"}
        lo, hi = sorted(rng.sample([-20, -3, -1, 0, 1, 7, 15, 2.5, -0.5], 2))
        if rng.random() < 0.7:
            s[rng.choice(["minimum", "exclusiveMinimum"])] = lo
        if rng.random() < 0.7:
            s[rng.choice(["maximum", "exclusiveMaximum"])] = hi
        return s
    if r < 0.35:
        s = {"type": "number"}
        for key in rng.sample(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"], rng.randint(0, 1)):
            s[key] = 0
        return s
    if r < 0.6:
        s = {"type": "string"}
        k = rng.random()
        if k < 0.4:
            for key in rng.sample(["minLength", "maxLength"], rng.randint(1, 2)):
                s[key] = rng.randint(0, 3)
            if s.get("minLength", 0) > s.get("maxLength", 9):
                s["minLength"], s["maxLength"] = s["maxLength"], s["minLength"]
        elif k < 0.7:
            s["pattern"] = rng.choice(["^a+$", "(x|y)z", "^[^a]{2}$", "^(a*b?)*$", "é", "^\\d*$", "^.?$"])
        elif k < 0.8:
            s["format"] = rng.choice(["date", "time", "uuid"])
        return s
    if r < 0.7:
        return {"enum": rng.sample([None, True, 0, -1, 2.5, "a", "é", "", "/\n\u001f", [1], {"a": None}],
                                   rng.randint(1, 4))}
    if r < 0.75:
        return {"const": rng.choice([None, 1, "x", "q\"\u0001", [], {}, {"\té": ["/"]}])}
    if r < 0.85:
        return {"type": rng.choice(["boolean", "null", ["null", "integer"], ["string", "boolean"]])}
    if r < 0.92:
        return {"allOf": [{"type": "integer", "minimum": rng.randint(-5, 5)}, {"maximum": rng.randint(-5, 9)},
                          {"exclusiveMaximum": rng.randint(0, 12)}]}
    return rng.choice([{}, True])


def random_schema(rng, depth, defs):
    r = rng.random()
    if depth >= 3 or r < 0.35:
        if defs and rng.random() < 0.15:
            return {"$ref": "#/$defs/" + rng.choice(defs)}
        return random_scalar(rng)
    if r < 0.6:
        s = {"type": "object", "properties": {}}
        for name in rng.sample(NAMES, rng.randint(0, 3)):
            s["properties"][name] = random_schema(rng, depth + 1, defs)
        k = rng.random()
        if k < 0.35:
            s["additionalProperties"] = False
        elif k < 0.55:
            s["additionalProperties"] = random_schema(rng, depth + 1, defs)
        extra = [] if k < 0.35 else ["r"]
        required = [n for n in list(s["properties"]) + extra if rng.random() < 0.4]
        if required:
            s["required"] = required
        if rng.random() < 0.2:
            del s["type"]
        return s
    if r < 0.8:
        s = {"type": "array"}
        if rng.random() < 0.4:
            s["prefixItems"] = [random_schema(rng, depth + 1, defs) for _ in range(rng.randint(1, 2))]
        k = rng.random()
        if k < 0.6:
            s["items"] = random_schema(rng, depth + 1, defs)
        elif k < 0.75:
            s["items"] = False
        for key in rng.sample(["minItems", "maxItems"], rng.randint(0, 2)):
            s[key] = rng.randint(0, 3)
        if s.get("minItems", 0) > s.get("maxItems", 9):
            s["minItems"], s["maxItems"] = s["maxItems"], s["minItems"]
        return s
    return {rng.choice(["anyOf", "oneOf"]): [random_schema(rng, depth + 1, defs) for _ in range(rng.randint(1, 3))]}


def random_case(rng, i):
    names = [f"d{k}" for k in range(rng.randint(0, 2))]
    defs = {n: random_schema(rng, 1, names) for n in names}
    schema = random_schema(rng, 0, names)
    if defs:
        if not isinstance(schema, dict):
            schema = {"anyOf": [schema]}
        schema["$defs"] = defs
    return {"name": f"random schema {i}", "schema": schema, "random": True}


# --- texts: generated (meant valid), mutated and random, spelled in many ways ---

INDENT = 20  # json_schema.h: at most 20 spaces or tabs after a line feed between tokens

ALPHABET = "az AZ09_-\"\\/\n\x01\x1f\u007fé中😀\u2028"
STRING_CHARS = [c for c in ALPHABET]


class Fixed(str):
    """A string the schema fixes (a listed key, an enum or const string): the grammar takes only
    its canonical spelling."""


def fixed(v):
    """An enum/const value with its strings and keys marked Fixed."""
    if isinstance(v, str):
        return Fixed(v)
    if isinstance(v, list):
        return [fixed(x) for x in v]
    if isinstance(v, dict):
        return {Fixed(k): fixed(x) for k, x in v.items()}
    return v


SHORT = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b",
         "\f": "\\f", "/": "\\/"}


def other_spellings(c):
    """The spellings of one character besides its canonical one (json.dumps's)."""
    cp = ord(c)
    units = [cp] if cp <= 0xFFFF else [0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + (cp & 0x3FF)]
    escape = "".join("\\u%04x" % u for u in units)
    forms = {escape, escape.upper().replace("\\U", "\\u"), SHORT.get(c, escape)}
    if cp >= 0x20 and c not in '"\\':
        forms.add(c)
    return sorted(forms - {json.dumps(c, ensure_ascii=False)[1:-1]})


def spell_string(rng, s):
    """A free string: each character canonically or, one time in four, spelled otherwise."""
    return '"' + "".join(rng.choice(other_spellings(c)) if rng.random() < 0.25 and other_spellings(c)
                         else json.dumps(c, ensure_ascii=False)[1:-1] for c in s) + '"'


def spell_fixed(rng, s):
    """A fixed string: canonically, or now and then with one character spelled otherwise (which
    the grammar must reject)."""
    chars = [i for i, c in enumerate(s) if other_spellings(c)]  # not "" nor only U+0001-like ones
    if rng.random() < 0.95 or not chars:
        return json.dumps(s, ensure_ascii=False)
    i = rng.choice(chars)
    return (json.dumps(s[:i], ensure_ascii=False)[:-1] + rng.choice(other_spellings(s[i])) +
            json.dumps(s[i + 1:], ensure_ascii=False)[1:])


def spell(rng, s):
    return spell_fixed(rng, s) if isinstance(s, Fixed) else spell_string(rng, s)


def ws(rng):
    """Whitespace between tokens: mostly what the grammar allows, now and then a run it rejects."""
    r, indent = rng.random(), lambda n: "\n" + "".join(rng.choice(" \t") for _ in range(n))
    if r < 0.985:
        return "" if r < 0.5 else " " if r < 0.75 else indent(rng.randint(0, 4) if r < 0.95 else INDENT)
    return rng.choice(["  ", "\t", "\r", "\r\n", "\n\n", " \n", "\n \n", indent(INDENT + 1), indent(40)])


def spell_number(rng, v):
    if isinstance(v, int):
        return str(v)
    d = decimal.Decimal(v)
    forms = [str(v), format(d, "f"), format(d, "e").replace("+", ""), format(d, "E")]
    return rng.choice([f for f in forms if re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?", f)]
                      or [str(v)])


def serialize(rng, v):
    if v is None or isinstance(v, bool):
        return json.dumps(v)
    if isinstance(v, (int, float, decimal.Decimal)):
        return spell_number(rng, v)
    if isinstance(v, str):
        return spell(rng, v)
    if isinstance(v, list):
        items = [serialize(rng, x) for x in v]
        opening, closing = "[", "]"
    else:
        items = [spell(rng, k) + ws(rng) + ":" + ws(rng) + serialize(rng, x) for k, x in v.items()]
        opening, closing = "{", "}"
    # opening ws (item ws ("," ws item ws)*)? closing, each ws drawn anew
    return opening + ws(rng) + "".join(("," + ws(rng) if i else "") + item + ws(rng)
                                       for i, item in enumerate(items)) + closing


def random_value(rng, depth=0):
    r = rng.random()
    if depth > 2 or r < 0.5:
        return rng.choice([None, True, False, 0, -1, 7, 1.5, -0.25, 123456789012, "", "a",
                           rng.choice(STRING_CHARS) * rng.randint(0, 3)])
    if r < 0.75:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["a", "b", "c", "x", "id", "é"]): random_value(rng, depth + 1)
            for _ in range(rng.randint(0, 3))}


def resolve(root, ref):
    node = root
    for token in ref.lstrip("#").split("/")[1:]:
        node = node[token.replace("~1", "/").replace("~0", "~")]
    return node


def generate(rng, root, s, depth=0):
    """A value meant to be valid under s (a guess: the oracle decides)."""
    if s is True or s == {} or depth > 6:
        return random_value(rng, 2) if depth > 6 else random_value(rng)
    if s is False:
        return None
    if "$ref" in s:
        return generate(rng, root, resolve(root, s["$ref"]), depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in s:
            branch = rng.choice(s[key])
            if isinstance(branch, bool):
                return generate(rng, root, branch, depth + 1)
            return generate(rng, root, {**{k: v for k, v in s.items() if k != key}, **branch}, depth + 1)
    if "allOf" in s:
        merged = {}
        for part in s["allOf"]:
            merged.update(part)
        return generate(rng, root, merged, depth + 1)
    if "const" in s:
        return fixed(s["const"])
    if "enum" in s:
        return fixed(rng.choice(s["enum"]))
    types = s.get("type", ["object", "array", "string", "integer", "number", "boolean", "null"])
    t = rng.choice(types if isinstance(types, list) else [types])
    if t == "null":
        return None
    if t == "boolean":
        return rng.random() < 0.5
    if t in ("integer", "number"):
        lo = s.get("minimum", s.get("exclusiveMinimum", -200))
        hi = s.get("maximum", s.get("exclusiveMaximum", 200))
        if t == "integer":
            lo, hi = int(lo) - 1, int(hi) + 1
            return rng.randint(min(lo, hi), max(lo, hi))
        return rng.choice([round(rng.uniform(lo - 1, hi + 1), rng.randint(0, 3)), 0, 0.0, lo, hi])
    if t == "string":
        if "format" in s:
            return "x"  # (the case's samples are the real ones)
        n = rng.randint(s.get("minLength", 0), s.get("maxLength", s.get("minLength", 0) + 5))
        return "".join(rng.choice(STRING_CHARS) for _ in range(n))
    if t == "array":
        prefix = s.get("prefixItems", [])
        n = rng.randint(s.get("minItems", 0), s.get("maxItems", max(len(prefix), s.get("minItems", 0)) + 3))
        items = s.get("items", True)
        return [generate(rng, root, prefix[i] if i < len(prefix) else items, depth + 1) for i in range(n)]
    props = s.get("properties", {})
    required = s.get("required", [])
    out = {}
    for k, sub in props.items():
        if k in required or rng.random() < 0.6:
            out[Fixed(k)] = generate(rng, root, sub, depth + 1)
    extra = s.get("additionalProperties", True)
    for r in required:
        if r not in out:
            out[Fixed(r)] = generate(rng, root, extra, depth + 1)
    if extra is not False and rng.random() < 0.4:
        for _ in range(rng.randint(1, 2)):
            out[rng.choice(["zz", "extra", "a", "é"])] = generate(rng, root, extra, depth + 1)
    return out


def mutate(rng, text):
    if not text:
        return rng.choice(ALPHABET)
    i = rng.randrange(len(text))
    r = rng.random()
    junk = rng.choice(list(ALPHABET) + ["{", "}", "[", "]", ",", ":", "0", "1", "-", ".", "e", "u",
                                        "null", "true", "\\u00", " " * 21, "  ", "\r\n", "\n\n",
                                        "\n" + " " * 21])
    if r < 0.3:
        return text[:i] + text[i + 1:]
    if r < 0.6:
        return text[:i] + junk + text[i:]
    if r < 0.85:
        return text[:i] + junk + text[i + 1:]
    j = rng.randrange(len(text))
    a, b = min(i, j), max(i, j)
    return text[:a] + text[a:b] * 2 + text[b:]


def texts_for(rng, case):
    schema = case["schema"]
    # Samples: every string marked fixed, so that listed keys are mostly canonical (a free string
    # spelled canonically is valid too).
    values = [generate(rng, schema, schema) for _ in range(120)] + [fixed(v) for v in case.get("samples", [])]
    texts = [ws(rng) + serialize(rng, v) + ws(rng) for v in values for _ in range(2)]
    texts += [mutate(rng, rng.choice(texts)) for _ in range(250)]
    texts += [serialize(rng, random_value(rng)) for _ in range(40)]
    texts += list(case.get("texts", []))
    return list(dict.fromkeys(texts))
