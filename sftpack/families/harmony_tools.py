"""gpt-oss's tools block: function schemas written as a TypeScript namespace, as the official template's
``render_tool_namespace`` and ``render_typescript_type`` macros write them (their whitespace included: a nested
object's property type follows a newline and 16 spaces, a oneOf's variants are joined by `` | `` and a newline; the
macro's ``has_object_variants`` is set inside a loop and so never seen, as in Jinja).

    >>> namespace([{"type": "function", "function": {"name": "f", "description": "d", "parameters": {
    ...     "type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}}}])
    '## functions\\n\\nnamespace functions {\\n\\n// d\\ntype f = (_: {\\nx: string,\\n}) => any;\\n\\n} // namespace functions'
"""

from __future__ import annotations

import json

from sftpack.families.render import TemplateError

NESTED = "\n" + " " * 16  # the template's own indentation before a nested property's type


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def _text(value, what: str) -> str:
    """``"..." + value`` in the template: a string, or the template raises."""
    if not isinstance(value, str):
        raise TemplateError(f"the gpt-oss template cannot write {what} {value!r} (not a string)")
    return value


def _nullable(spec: dict) -> str:
    return " | null" if spec.get("nullable") else ""


def ts_type(spec) -> str:
    """``render_typescript_type(spec)``."""
    if not isinstance(spec, dict):
        return "any"
    kind = spec.get("type")
    if kind == "array":
        items = spec.get("items")
        if not items:
            return "any[]" + _nullable(spec)
        simple = {"string": "string[]", "number": "number[]", "integer": "number[]", "boolean": "boolean[]"}
        kind = items.get("type") if isinstance(items, dict) else None
        inner = simple.get(kind) if isinstance(kind, str) else None
        if inner is None:
            inner = ts_type(items)
            inner = "any[]" if inner == "object | object" or len(inner) > 50 else inner + "[]"
        return inner + _nullable(spec)
    if isinstance(kind, list) and kind:
        return " | ".join(map(str, kind)) if len(kind) > 1 else str(kind[0])
    if spec.get("oneOf"):
        return _one_of(spec["oneOf"])
    if kind == "string":
        if spec.get("enum"):
            return '"' + '" | "'.join(map(str, spec["enum"])) + '"'
        return "string" + _nullable(spec)
    if kind in ("number", "integer"):
        return "number"
    if kind == "boolean":
        return "boolean"
    if kind == "object":
        properties = spec.get("properties")
        if not properties:
            return "object"
        required = spec.get("required") or []
        parts = [name + ("" if name in required else "?") + ": " + NESTED + ts_type(prop) for name, prop in properties.items()]
        return "{\n" + ", ".join(parts) + "}"
    return "any"


def _one_of(variants: list) -> str:
    out = []
    for k, variant in enumerate(variants):
        text = ts_type(variant)
        if isinstance(variant, dict) and variant.get("description"):
            text += "// " + _text(variant["description"], "a description")
        if isinstance(variant, dict) and "default" in variant:
            text += " " * 20 + "// default: " + _json(variant["default"])
        if k < len(variants) - 1:
            text += " | \n"
        out.append(text)
    return "".join(out)


def _parameter(name: str, spec: dict, required: list) -> str:
    text = ""
    if spec.get("description"):
        text += "// " + _text(spec["description"], "a parameter description") + "\n"
    text += name + ("" if name in required else "?") + ": " + ts_type(spec)
    if "default" in spec:
        if spec.get("enum"):
            text += ", // default: " + _text(spec["default"], "a default")
        elif spec.get("oneOf"):
            text += "// default: " + _text(spec["default"], "a default")
        else:
            text += ", // default: " + _json(spec["default"])
    return text + ",\n"


def namespace(tools: list) -> str:
    """``render_tool_namespace("functions", tools)``."""
    out = "## functions\n\nnamespace functions {\n\n"
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict):
            raise TemplateError("the gpt-oss template reads each tool's `function`")
        out += "// " + _text(function.get("description"), "a tool description") + "\n"
        out += "type " + _text(function.get("name"), "a tool name") + " = "
        parameters = function.get("parameters")
        properties = parameters.get("properties") if isinstance(parameters, dict) else None
        if properties:
            required = parameters.get("required") or []
            out += "(_: {\n" + "".join(_parameter(n, s if isinstance(s, dict) else {}, required)
                                       for n, s in properties.items()) + "}) => any;\n\n"
        else:
            out += "() => any;\n\n"
    return out + "} // namespace functions"
