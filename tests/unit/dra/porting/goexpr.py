"""A reader of the Go expressions upstream's DRA test tables are written in: tokens, a parser to
a small tree, and an evaluator over Python stand-ins of the tables' helper functions. Used only
to regenerate ``tests/unit/dra/data/`` from ``../shared/reference/kubernetes-v1.36.3``; a case
it cannot read (a closure, a statement) is reported, and the data file lists it as skipped."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_TOKEN = re.compile(
    r"""(?P<ws>\s+|//[^\n]*|/\*.*?\*/)
    |(?P<raw>`[^`]*`)
    |(?P<str>"(?:[^"\\\n]|\\.)*")
    |(?P<rune>'(?:[^'\\]|\\.)')
    |(?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
    |(?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<op>\.\.\.|:=|\+\+|\+=|&&|\|\||==|!=|<=|>=|<<|>>|[-+*/%&|!<>=(){}\[\],.:;^])""",
    re.S | re.X,
)


class GoError(Exception):
    """Something the reader does not understand."""


@dataclass
class Tok:
    kind: str
    text: str


def tokenize(src: str) -> list[Tok]:
    out, pos = [], 0
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if m is None:
            raise GoError(f"cannot tokenize at {src[pos : pos + 30]!r}")
        pos = m.end()
        kind = m.lastgroup or ""
        if kind == "ws":
            continue
        out.append(Tok(kind, m.group()))
    return out


def go_string(tok: Tok) -> str:
    if tok.kind == "raw":
        return tok.text[1:-1]
    return bytes(tok.text[1:-1], "utf-8").decode("unicode_escape")


# --- tree ---------------------------------------------------------------------------------
@dataclass
class Lit:
    value: Any


@dataclass
class Name:
    name: str  # may be qualified: "resourceapi.DeviceAllocationModeAll"


@dataclass
class Call:
    func: Any
    args: list[Any]
    spread: bool = False


@dataclass
class Attr:
    target: Any
    name: str


@dataclass
class Composite:
    type: str  # "" when elided
    elems: list[tuple[Any, Any]]  # (key or None, value)


@dataclass
class Unary:
    op: str
    operand: Any


@dataclass
class Binary:
    op: str
    left: Any
    right: Any


@dataclass
class Index:
    target: Any
    index: Any


@dataclass
class Closure:
    stmts: list[tuple[str, Any, Any]]  # (":=" | "=" | "++" | "return", target, value)


class Parser:
    def __init__(self, toks: list[Tok]) -> None:
        self.toks = toks
        self.i = 0

    def peek(self, off: int = 0) -> Tok:
        return self.toks[self.i + off] if self.i + off < len(self.toks) else Tok("eof", "")

    def next(self) -> Tok:
        tok = self.peek()
        self.i += 1
        return tok

    def expect(self, text: str) -> None:
        tok = self.next()
        if tok.text != text:
            raise GoError(f"expected {text!r}, got {tok.text!r}")

    def type_expr(self) -> str:
        """A type as text: []T, map[K]V, *T, pkg.T, T[U]."""
        tok = self.peek()
        if tok.text == "[":
            self.next()
            self.expect("]")
            return "[]" + self.type_expr()
        if tok.text == "*":
            self.next()
            return "*" + self.type_expr()
        if tok.text == "map":
            self.next()
            self.expect("[")
            key = self.type_expr()
            self.expect("]")
            return f"map[{key}]" + self.type_expr()
        if tok.text == "func":
            raise GoError("closure")
        name = self.next().text
        while self.peek().text == ".":
            self.next()
            name += "." + self.next().text
        if self.peek().text == "[" and self.peek(1).kind == "ident" and self.peek(2).text == "]":
            self.next()
            name += "[" + self.type_expr() + "]"
            self.expect("]")
        return name

    def expr(self, prec: int = 0) -> Any:
        left = self.unary()
        ops = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 3, ">": 3, "<=": 3, ">=": 3, "+": 4, "-": 4, "*": 5, "/": 5}
        while True:
            tok = self.peek()
            p = ops.get(tok.text)
            if p is None or p <= prec:
                return left
            self.next()
            left = Binary(tok.text, left, self.expr(p))

    def unary(self) -> Any:
        tok = self.peek()
        if tok.text in ("&", "-", "!", "*"):
            self.next()
            return Unary(tok.text, self.unary())
        return self.postfix(self.primary())

    def composite_body(self, type_: str) -> Composite:
        self.expect("{")
        elems = []
        while self.peek().text != "}":
            if self.peek().text == "{":
                value: Any = self.composite_body("")
                key = None
            else:
                value = self.expr()
                key = None
            if self.peek().text == ":":
                self.next()
                key = value
                value = self.composite_body("") if self.peek().text == "{" else self.expr()
            elems.append((key, value))
            if self.peek().text == ",":
                self.next()
            elif self.peek().text != "}":
                raise GoError(f"unexpected {self.peek().text!r} in composite literal")
        self.expect("}")
        return Composite(type_, elems)

    def primary(self) -> Any:
        tok = self.peek()
        if tok.kind in ("str", "raw"):
            self.next()
            return Lit(go_string(tok))
        if tok.kind == "num":
            self.next()
            return Lit(float(tok.text) if "." in tok.text or "e" in tok.text.lower() else int(tok.text))
        if tok.text == "(":
            self.next()
            inner = self.expr()
            self.expect(")")
            return inner
        if tok.text in ("[", "map"):
            type_ = self.type_expr()
            if self.peek().text == "{":
                return self.composite_body(type_)
            if self.peek().text == "(":
                return Name(type_)  # a conversion
            raise GoError(f"type {type_} without literal")
        if tok.text == "func":
            return self.closure()
        if tok.kind == "ident":
            self.next()
            name = tok.text
            if name in ("true", "false"):
                return Lit(name == "true")
            if name == "nil":
                return Lit(None)
            return Name(name)
        raise GoError(f"unexpected token {tok.text!r}")

    def closure(self) -> Closure:
        """``func() T { statements }()``: assignments, increments and a return."""
        self.expect("func")
        self.expect("(")
        self.expect(")")
        self.type_expr()
        self.expect("{")
        stmts: list[tuple[str, Any, Any]] = []
        while self.peek().text != "}":
            if self.peek().text == "return":
                self.next()
                stmts.append(("return", None, self.expr()))
                continue
            target = self.expr()
            op = self.next().text
            if op == "++":
                stmts.append(("++", target, None))
            elif op in (":=", "=", "+="):
                stmts.append((op, target, self.expr()))
            else:
                raise GoError(f"statement with {op!r}")
            if self.peek().text == ";":
                self.next()
        self.expect("}")
        self.expect("(")
        self.expect(")")
        return Closure(stmts)

    def postfix(self, node: Any) -> Any:
        while True:
            tok = self.peek()
            if tok.text == ".":
                self.next()
                name = self.next().text
                if (
                    isinstance(node, Name)
                    and node.name[0].islower()
                    and "." not in node.name
                    and _is_package(node.name)
                ):
                    node = Name(node.name + "." + name)
                else:
                    node = Attr(node, name)
            elif tok.text == "(":
                self.next()
                args, spread = [], False
                while self.peek().text != ")":
                    args.append(self.expr())
                    if self.peek().text == "...":
                        self.next()
                        spread = True
                    if self.peek().text == ",":
                        self.next()
                self.expect(")")
                node = Call(node, args, spread)
            elif tok.text == "{" and isinstance(node, Name) and _is_type_name(node.name):
                node = self.composite_body(node.name)
            elif tok.text == "[":
                # generic instantiation (sets.New[T]) or index
                self.next()
                if isinstance(node, Name) and self.peek().kind == "ident" and self.peek(1).text == "]":
                    type_arg = self.type_expr()
                    self.expect("]")
                    node = Name(f"{node.name}[{type_arg}]")
                else:
                    index = self.expr()
                    self.expect("]")
                    node = Index(node, index)
            else:
                return node


_PACKAGES = {
    "environment",
    "resourceapi",
    "v1",
    "metav1",
    "resource",
    "ptr",
    "fmt",
    "gomega",
    "sets",
    "apitypes",
    "runtime",
    "slices",
    "types",
    "strings",
    "internal",
    "cel",
}


def _is_package(name: str) -> bool:
    return name in _PACKAGES


def _is_type_name(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return (
        bool(last)
        and last[0].isupper()
        and (
            "." in name
            or name
            in {
                "Features",
                "AllocatedState",
                "ConsumedCapacityCollection",
                "ConsumedCapacity",
                "AllocatorTestCase",
                "DeviceID",
            }
        )
    )


def parse_expr(src: str) -> Any:
    parser = Parser(tokenize(src))
    node = parser.expr()
    if parser.peek().kind != "eof":
        raise GoError(f"trailing {parser.peek().text!r}")
    return node


# --- evaluation -------------------------------------------------------------------------
JSON_NAMES = {
    "CEL": "cel",
    "ObjectMeta": "metadata",
    "IntValue": "int",
    "BoolValue": "bool",
    "StringValue": "string",
    "VersionValue": "version",
    "IntValues": "ints",
    "BoolValues": "bools",
    "StringValues": "strings",
    "VersionValues": "versions",
}
INLINE = {"DeviceConfiguration"}


def json_name(field: str) -> str:
    return JSON_NAMES.get(field) or field[0].lower() + field[1:]


@dataclass
class Env:
    names: dict[str, Any]
    funcs: dict[str, Callable[..., Any]]
    methods: dict[str, Callable[..., Any]]


def evaluate(node: Any, env: Env) -> Any:
    if isinstance(node, Lit):
        return node.value
    if isinstance(node, Name):
        if node.name in env.names:
            return env.names[node.name]
        raise GoError(f"unknown name {node.name}")
    if isinstance(node, Unary):
        value = evaluate(node.operand, env)
        if node.op in ("&", "*"):
            return value
        if node.op == "-":
            return -value
        return not value
    if isinstance(node, Binary):
        left, right = evaluate(node.left, env), evaluate(node.right, env)
        return {
            "+": lambda: left + right,
            "-": lambda: left - right,
            "*": lambda: left * right,
            "/": lambda: left // right,
            "==": lambda: left == right,
            "!=": lambda: left != right,
            "&&": lambda: left and right,
            "||": lambda: left or right,
            "<": lambda: left < right,
            ">": lambda: left > right,
        }[node.op]()
    if isinstance(node, Index):
        return evaluate(node.target, env)[evaluate(node.index, env)]
    if isinstance(node, Composite):
        return composite(node, node.type, env)
    if isinstance(node, Closure):
        return run_closure(node, env)
    if isinstance(node, Attr):
        target = evaluate(node.target, env)
        key = ("attr", node.name)
        if isinstance(target, dict) and json_name(node.name) in target:
            return target[json_name(node.name)]
        raise GoError(f"attribute {node.name} of {type(target).__name__}: {key}")
    if isinstance(node, Call):
        args = [evaluate(a, env) for a in node.args]
        if node.spread:
            args = args[:-1] + list(args[-1] or [])
        if isinstance(node.func, Attr):
            target = evaluate(node.func.target, env)
            method = env.methods.get(node.func.name)
            if method is None:
                raise GoError(f"unknown method {node.func.name}")
            return method(target, *args)
        name = node.func.name if isinstance(node.func, Name) else None
        if name is None:
            raise GoError("call of a computed function")
        base = re.sub(r"\[.*\]$", "", name)
        if base in env.funcs:
            return env.funcs[base](*args)
        if _is_type_name(base) or base in (
            "int64",
            "int",
            "string",
            "resourceapi.DeviceAllocationMode",
            "resourceapi.QualifiedName",
            "resourceapi.FullyQualifiedName",
            "apitypes.UID",
        ):
            return args[0]  # a conversion
        raise GoError(f"unknown function {name}")
    raise GoError(f"cannot evaluate {type(node).__name__}")


def _elem_type(type_: str) -> str:
    if type_.startswith("[]"):
        return type_[2:]
    if type_.startswith("map["):
        depth, i = 0, 3
        while i < len(type_):
            if type_[i] == "[":
                depth += 1
            elif type_[i] == "]":
                depth -= 1
                if depth == 0:
                    return type_[i + 1 :]
            i += 1
    return ""


def composite(node: Composite, type_: str, env: Env) -> Any:
    type_ = node.type or type_
    bare = type_.lstrip("*")
    if bare.startswith("[]"):
        elem = _elem_type(bare)
        return [composite(v, elem, env) if isinstance(v, Composite) else evaluate(v, env) for _, v in node.elems]
    if bare.startswith("map[") or bare in ("ConsumedCapacityCollection", "ConsumedCapacity"):
        elem = (
            _elem_type(bare)
            if bare.startswith("map[")
            else ("ConsumedCapacity" if bare == "ConsumedCapacityCollection" else "")
        )
        out: dict[Any, Any] = {}
        for k, v in node.elems:
            key = evaluate(k, env)
            if isinstance(key, list):
                key = tuple(key)
            out[key] = composite(v, elem, env) if isinstance(v, Composite) else evaluate(v, env)
        return out
    if bare in env.funcs and not node.elems:
        return env.funcs[bare]()
    obj: dict[str, Any] = {}
    for k, v in node.elems:
        if not isinstance(k, Name):
            raise GoError(f"struct {bare} with a computed key")
        value = composite(v, "", env) if isinstance(v, Composite) else evaluate(v, env)
        if k.name in INLINE and isinstance(value, dict):
            obj.update(value)
        else:
            obj[json_name(k.name)] = value
    converter = env.funcs.get("struct:" + bare)
    return converter(obj) if converter else obj


def _path(node: Any) -> tuple[str, list[Any]]:
    """A variable and the field names/indexes below it."""
    steps: list[Any] = []
    while not isinstance(node, Name):
        if isinstance(node, Attr):
            steps.append(json_name(node.name))
            node = node.target
        elif isinstance(node, Index):
            steps.append(node.index)
            node = node.target
        else:
            raise GoError("assignment to an expression")
    return node.name, list(reversed(steps))


def run_closure(closure: Closure, env: Env) -> Any:
    local = Env(dict(env.names), env.funcs, env.methods)
    for op, target, value in closure.stmts:
        if op == "return":
            return evaluate(value, local)
        if op == ":=":
            local.names[target.name] = evaluate(value, local)
            continue
        var, steps = _path(target)
        obj = local.names[var]
        if isinstance(obj, dict) and "metadata" in obj and steps and steps[0] in ("name", "namespace", "labels"):
            steps = ["metadata", *steps]
        for step in steps[:-1]:
            key = evaluate(step, local) if not isinstance(step, str) else step
            obj = obj.setdefault(key, {}) if isinstance(obj, dict) else obj[key]
        last = steps[-1] if isinstance(steps[-1], str) else evaluate(steps[-1], local)
        if op == "++":
            obj[last] = obj.get(last, 0) + 1
        elif op == "+=":
            obj[last] = obj[last] + evaluate(value, local)
        else:
            v = value
            obj[last] = composite(v, "", local) if isinstance(v, Composite) else evaluate(v, local)
    raise GoError("closure without return")
