"""``--where``: a small filter language parsed into a pyarrow compute expression (never ``eval``).

Grammar (keywords in any case)::

    expr    := or
    or      := and ("or" and)*
    and     := not ("and" not)*
    not     := "not" not | compare | "(" expr ")"
    compare := operand OP operand          OP: == = != <> < <= > >=
    operand := NUMBER | STRING | COLUMN | "-" NUMBER

A ``COLUMN`` is a name (letters, digits, ``_`` and ``.``, not starting with a
digit) or any text between backticks; a ``STRING`` is quoted with ``'`` or
``"``. Every comparison names at least one column. A column compared with a
number is numeric: its cells are read as numbers (a cell that is not a number
skips its row, as for the coordinates); one compared with a string is read as
text. A row whose compared cell is empty is filtered out (under ``not`` too).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import UserError

__all__ = ["Where", "parse"]

_TOKEN = re.compile(r"""\s*(?:
    (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf\b)
  | (?P<string>'[^']*'|"[^"]*")
  | (?P<quoted>`[^`]+`)
  | (?P<op>==|!=|<>|<=|>=|=|<|>|\(|\)|-)
  | (?P<name>[A-Za-z_][A-Za-z0-9_.]*)
  )""", re.VERBOSE | re.IGNORECASE)
_KEYWORDS = {"and", "or", "not"}
_COMPARE = {"==": "eq", "=": "eq", "!=": "ne", "<>": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
#: the comparison that holds with its operands swapped (``3 < x`` is ``x > 3``)
_SWAP = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


@dataclass
class Where:
    """A parsed filter: the expression and which columns it reads as numbers and as text."""

    text: str
    expression: object  #: pyarrow.compute.Expression
    numeric: set = field(default_factory=set)
    textual: set = field(default_factory=set)

    @property
    def columns(self) -> list:
        return sorted(self.numeric | self.textual)


def parse(text: str) -> Where:
    """The :class:`Where` of ``text``; a :class:`UserError` names what is wrong and where."""
    tokens = _tokens(text)
    parser = _Parser(text, tokens)
    expr = parser.disjunction()
    if parser.pos < len(tokens):
        parser.fail(f"unexpected {tokens[parser.pos][1]!r}")
    return Where(text, expr, parser.numeric, parser.textual)


def _tokens(text):
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise UserError(f"--where {text!r}: cannot read {text[pos:].strip()[:20]!r}")
        kind = m.lastgroup
        value = m.group(kind)
        if kind == "name" and value.lower() in _KEYWORDS:
            kind, value = "keyword", value.lower()
        elif kind == "quoted":
            kind, value = "name", value[1:-1]
        elif kind == "string":
            value = value[1:-1]
        elif kind == "number":
            value = float(value)
        out.append((kind, value))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text, tokens):
        self.text, self.tokens, self.pos = text, tokens, 0
        self.numeric, self.textual = set(), set()

    def fail(self, what):
        raise UserError(f"--where {self.text!r}: {what} (e.g. --where \"fare > 0 and not vendor == 'CMT'\")")

    def peek(self, kind=None, value=None):
        if self.pos >= len(self.tokens):
            return None
        tok = self.tokens[self.pos]
        if (kind is None or tok[0] == kind) and (value is None or tok[1] == value):
            return tok
        return None

    def take(self, kind=None, value=None):
        tok = self.peek(kind, value)
        if tok is not None:
            self.pos += 1
        return tok

    def disjunction(self):
        expr = self.conjunction()
        while self.take("keyword", "or"):
            expr = expr | self.conjunction()
        return expr

    def conjunction(self):
        expr = self.negation()
        while self.take("keyword", "and"):
            expr = expr & self.negation()
        return expr

    def negation(self):
        if self.take("keyword", "not"):
            return ~self.negation()
        if self.take("op", "("):
            expr = self.disjunction()
            if not self.take("op", ")"):
                self.fail("a '(' without its ')'")
            return expr
        return self.comparison()

    def operand(self):
        if self.take("op", "-"):
            tok = self.take("number")
            if tok is None:
                self.fail("'-' must precede a number")
            return "number", -tok[1]
        tok = self.take()
        if tok is None or tok[0] not in ("number", "string", "name"):
            self.fail("expected a column, a number or a string" + (f", got {tok[1]!r}" if tok else " at the end"))
        return tok

    def comparison(self):
        import pyarrow.compute as pc

        left = self.operand()
        op = self.take("op")
        if op is None or op[1] not in _COMPARE:
            self.fail(f"expected a comparison (==, !=, <, <=, >, >=) after {left[1]!r}")
        right = self.operand()
        name = _COMPARE[op[1]]
        if left[0] != "name":
            left, right, name = right, left, _SWAP[name]
        if left[0] != "name":
            self.fail(f"the comparison {op[1]!r} names no column")
        column = pc.field(left[1])
        if right[0] == "name":  # two columns: numbers unless either is compared with text elsewhere
            self.numeric.update((left[1], right[1]))
            other = pc.field(right[1])
        else:
            (self.numeric if right[0] == "number" else self.textual).add(left[1])
            other = pc.scalar(right[1])
        if self.numeric & self.textual:
            self.fail(f"column {sorted(self.numeric & self.textual)[0]!r} compared with both numbers and text")
        return getattr(column, {"eq": "__eq__", "ne": "__ne__", "lt": "__lt__", "le": "__le__",
                                "gt": "__gt__", "ge": "__ge__"}[name])(other)
