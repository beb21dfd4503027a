"""Twenty JSON schemas for structured-output tests and benchmarks: nested
objects, enums, arrays with bounds, $ref / $defs (recursive too), anyOf,
const, string formats and lengths, integer ranges, additional properties."""

POINT = {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]}

SCHEMAS = {
    "person": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 40},
                                                "age": {"type": "integer", "minimum": 0, "maximum": 120}},
               "required": ["name", "age"]},
    "color_enum": {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]}}, "required": ["color"]},
    "tags": {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 20},
                                                       "minItems": 1, "maxItems": 4}}, "required": ["tags"]},
    "nested": {"type": "object", "properties": {
        "user": {"type": "object", "properties": {"id": {"type": "integer"}, "email": {"type": "string", "format": "email"}},
                 "required": ["id", "email"]},
        "active": {"type": "boolean"}}, "required": ["user", "active"]},
    "points_ref": {"$defs": {"point": POINT}, "type": "object",
                   "properties": {"points": {"type": "array", "items": {"$ref": "#/$defs/point"}, "minItems": 2, "maxItems": 3}},
                   "required": ["points"]},
    "any_of": {"type": "object", "properties": {"value": {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 10},
                                                                      {"type": "null"}]}}, "required": ["value"]},
    "const_version": {"type": "object", "properties": {"version": {"const": 2}, "name": {"type": "string", "maxLength": 30}},
                      "required": ["version", "name"]},
    "date": {"type": "object", "properties": {"date": {"type": "string", "format": "date"}}, "required": ["date"]},
    "uuid": {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}}, "required": ["id"]},
    "optional_fields": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 12},
                                                         "c": {"type": "boolean"}}},
    "matrix": {"type": "object", "properties": {"rows": {"type": "array", "maxItems": 3, "items": {
        "type": "array", "items": {"type": "integer", "minimum": -9, "maximum": 9}, "minItems": 2, "maxItems": 2}}},
               "required": ["rows"]},
    "tree": {"$defs": {"leaf": {"type": "object", "properties": {"label": {"type": "string", "maxLength": 8}},
                                "required": ["label"]},
                       "node": {"type": "object", "properties": {
                           "label": {"type": "string", "maxLength": 8},
                           "children": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/leaf"}}},
                                "required": ["label", "children"]}},
             "$ref": "#/$defs/node"},
    "top_array": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 100}, "minItems": 3, "maxItems": 5},
    "type_list": {"type": "object", "properties": {"note": {"type": ["string", "null"], "maxLength": 25}}, "required": ["note"]},
    "pattern": {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{3}$"}},
                "required": ["code"]},
    "tuple": {"type": "object", "properties": {"pair": {"type": "array", "prefixItems": [{"type": "string", "maxLength": 10},
                                                                                       {"type": "integer"}],
                                                        "items": False, "minItems": 2}}, "required": ["pair"]},
    "extra_props": {"type": "object", "properties": {"id": {"type": "integer"}},
                    "additionalProperties": {"type": "integer"}, "maxProperties": 4, "required": ["id"]},
    "datetime": {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"},
                                                  "level": {"enum": ["info", "warn", "error"]}}, "required": ["at", "level"]},
    "product": {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 30}, "price": {"type": "number"},
        "stock": {"type": "integer", "minimum": 0, "maximum": 10000},
        "category": {"enum": ["book", "toy", "food"]}}, "required": ["name", "price", "stock", "category"]},
    "one_of_shapes": {"oneOf": [
        {"type": "object", "properties": {"circle": {"type": "object", "properties": {"r": {"type": "number"}}, "required": ["r"]}},
         "required": ["circle"]},
        {"type": "object", "properties": {"square": {"type": "object", "properties": {"side": {"type": "number"}}, "required": ["side"]}},
         "required": ["square"]}]},
}

# One valid instance of each schema, properties in the schema's order: the
# token walks of tests/bench/grammar_vs_peers.py follow them.
EXAMPLES = {
    "person": {"name": "Ada Lovelace", "age": 36},
    "color_enum": {"color": "green"},
    "tags": {"tags": ["poetry", "maths", "engines"]},
    "nested": {"user": {"id": 42, "email": "ada@example.org"}, "active": True},
    "points_ref": {"points": [{"x": 1.5, "y": -2}, {"x": 0, "y": 3.25}]},
    "any_of": {"value": "seven"},
    "const_version": {"version": 2, "name": "analytical engine"},
    "date": {"date": "1843-09-05"},
    "uuid": {"id": "123e4567-e89b-12d3-a456-426614174000"},
    "optional_fields": {"a": 7, "c": False},
    "matrix": {"rows": [[1, -2], [3, 9], [-9, 0]]},
    "tree": {"label": "root", "children": [{"label": "left"}, {"label": "right"}]},
    "top_array": [5, 17, 100, 1],
    "type_list": {"note": None},
    "pattern": {"code": "ABC-123"},
    "tuple": {"pair": ["width", 640]},
    "extra_props": {"id": 1, "width": 640, "height": 480},
    "datetime": {"at": "2024-05-01T12:30:00Z", "level": "warn"},
    "product": {"name": "Dune", "price": 9.99, "stock": 12, "category": "book"},
    "one_of_shapes": {"square": {"side": 2.5}},
}
