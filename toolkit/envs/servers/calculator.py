"""Calculator: exact arithmetic so the model does not have to do it in its head.

The Scale MCP Tool Use write-up notes that trained models learn to reach for a calculator on numeric
sub-tasks. ``calculate`` evaluates an arithmetic expression with a small AST walker (no ``eval``).
"""

from __future__ import annotations

import ast
import math
import operator
import statistics
from datetime import date
from typing import Annotated, Any

from pydantic import Field

from toolkit.envs.servers.base import DomainServer, invalid, not_found, tool

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}  # fmt: skip
_FUNCS = {"sqrt": math.sqrt, "abs": abs, "round": round, "min": min, "max": max, "log": math.log,
          "log10": math.log10, "exp": math.exp, "floor": math.floor, "ceil": math.ceil}  # fmt: skip
_CONSTS = {"pi": math.pi, "e": math.e}
# Units as (dimension, factor to the base unit); temperatures are handled separately.
_UNITS = {
    "mm": ("length", 0.001), "cm": ("length", 0.01), "m": ("length", 1.0), "km": ("length", 1000.0),
    "in": ("length", 0.0254), "ft": ("length", 0.3048), "mi": ("length", 1609.344),
    "g": ("mass", 0.001), "kg": ("mass", 1.0), "lb": ("mass", 0.45359237), "oz": ("mass", 0.028349523125),
    "ml": ("volume", 0.001), "l": ("volume", 1.0), "gal": ("volume", 3.785411784),
    "s": ("time", 1.0), "min": ("time", 60.0), "h": ("time", 3600.0), "day": ("time", 86400.0),
}  # fmt: skip
_TEMPS = {"c", "f", "k"}
Number = Annotated[float, Field(description="A number.")]


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.Name) and node.id in _CONSTS:
        return _CONSTS[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        v = _eval(node.operand)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 1000:
            raise invalid("exponent too large (limit 1000).")
        return _BINOPS[type(node.op)](left, right)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCS
        and not node.keywords
    ):
        return _FUNCS[node.func.id](*[_eval(a) for a in node.args])
    raise invalid(
        f"unsupported syntax '{ast.unparse(node)}'. Use numbers, + - * / // % **, parentheses, "
        f"pi, e and the functions {', '.join(sorted(_FUNCS))}."
    )


class Calculator(DomainServer):
    name = "calculator"
    description = (
        "Exact arithmetic, percentages, statistics, unit conversion, dates and a small named memory."
    )

    @tool(read_only=True)
    def calculate(
        self,
        expression: Annotated[str, Field(description="Arithmetic expression, e.g. '(120.5 - 80) * 1.2'.")],
    ) -> dict[str, Any]:
        """Evaluate an arithmetic expression exactly."""
        if len(expression) > 500:
            raise invalid("expression longer than 500 characters.")
        try:
            tree = ast.parse(expression.replace("^", "**"), mode="eval")
        except SyntaxError:
            raise invalid(
                f"could not parse '{expression}'. Example of a valid expression: '(2 + 3) * 4'."
            ) from None
        try:
            value = _eval(tree)
        except ZeroDivisionError:
            raise invalid("division by zero.") from None
        except (ValueError, OverflowError, TypeError) as exc:
            raise invalid(f"{expression}: {exc}") from None
        return {"expression": expression, "result": value}

    @tool(read_only=True)
    def percent_of(
        self,
        percent: Annotated[float, Field(description="The percentage, e.g. 15 for 15%.")],
        value: Number,
    ) -> dict[str, Any]:
        """Compute percent% of value (e.g. 15% of 80 = 12)."""
        return {"result": value * percent / 100}

    @tool(read_only=True)
    def percent_change(self, old: Number, new: Number) -> dict[str, Any]:
        """Relative change from old to new, in percent."""
        if old == 0:
            raise invalid("old is 0, so the percent change is undefined.")
        return {"old": old, "new": new, "percent_change": (new - old) / abs(old) * 100}

    @tool(read_only=True)
    def describe_numbers(
        self, values: Annotated[list[float], Field(min_length=1, description="The numbers to summarise.")]
    ) -> dict[str, Any]:
        """Count, sum, mean, median, standard deviation, min and max of a list of numbers."""
        return {
            "count": len(values),
            "sum": math.fsum(values),
            "mean": statistics.fmean(values),
            "median": statistics.median(values),
            "stdev": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min": min(values),
            "max": max(values),
        }

    @tool(read_only=True)
    def convert_units(
        self,
        value: Number,
        from_unit: Annotated[str, Field(description="Unit to convert from, e.g. 'km', 'lb', 'F'.")],
        to_unit: Annotated[str, Field(description="Unit to convert to, e.g. 'mi', 'kg', 'C'.")],
    ) -> dict[str, Any]:
        """Convert between units of length, mass, volume, time or temperature (C, F, K)."""
        f, t = from_unit.strip().lower(), to_unit.strip().lower()
        if f in _TEMPS and t in _TEMPS:
            kelvin = {"c": value + 273.15, "f": (value - 32) * 5 / 9 + 273.15, "k": value}[f]
            out = {"c": kelvin - 273.15, "f": (kelvin - 273.15) * 9 / 5 + 32, "k": kelvin}[t]
            return {"value": value, "from": from_unit, "to": to_unit, "result": round(out, 6)}
        known = sorted(_UNITS) + ["C", "F", "K"]
        for u, raw in ((f, from_unit), (t, to_unit)):
            if u not in _UNITS and u not in _TEMPS:
                raise not_found("Unit", raw, known, f"Known units: {', '.join(known)}.")
        if f in _TEMPS or t in _TEMPS or _UNITS[f][0] != _UNITS[t][0]:
            raise invalid(f"cannot convert {from_unit} to {to_unit}: different dimensions.")
        return {
            "value": value,
            "from": from_unit,
            "to": to_unit,
            "result": value * _UNITS[f][1] / _UNITS[t][1],
        }

    @tool(read_only=True)
    def compound_interest(
        self,
        principal: Annotated[float, Field(gt=0, description="Starting amount.")],
        rate_percent: Annotated[float, Field(description="Yearly interest rate in percent.")],
        years: Annotated[float, Field(ge=0, le=200, description="Number of years.")],
        periods_per_year: Annotated[
            int, Field(ge=1, le=365, description="Compounding periods per year.")
        ] = 12,
    ) -> dict[str, Any]:
        """Future value of a principal with compound interest."""
        growth = 1 + rate_percent / 100 / periods_per_year
        if growth < 0:
            raise invalid(f"rate_percent {rate_percent} loses more than everything in one period.")
        try:
            fv = principal * growth ** (periods_per_year * years)
        except OverflowError:
            fv = math.inf
        if not math.isfinite(fv):
            raise invalid("the future value is too large to represent; use a lower rate or fewer years.")
        return {"future_value": round(fv, 2), "interest": round(fv - principal, 2)}

    @tool(read_only=True)
    def loan_payment(
        self,
        principal: Annotated[float, Field(gt=0, description="Amount borrowed.")],
        annual_rate_percent: Annotated[float, Field(ge=0, description="Yearly interest rate in percent.")],
        months: Annotated[int, Field(ge=1, le=600, description="Number of monthly payments.")],
    ) -> dict[str, Any]:
        """Monthly payment of an amortised loan, and the total interest paid."""
        r = annual_rate_percent / 100 / 12
        pay = principal / months if r == 0 else principal * r / (1 - (1 + r) ** -months)
        return {"monthly_payment": round(pay, 2), "total_interest": round(pay * months - principal, 2)}

    @tool(read_only=True)
    def days_between(
        self,
        start_date: Annotated[str, Field(description="First date, YYYY-MM-DD.")],
        end_date: Annotated[str, Field(description="Second date, YYYY-MM-DD.")],
    ) -> dict[str, Any]:
        """Number of days from start_date to end_date (negative if end is earlier)."""
        try:
            a, b = date.fromisoformat(start_date), date.fromisoformat(end_date)
        except ValueError:
            raise invalid(f"dates must be YYYY-MM-DD, got '{start_date}' and '{end_date}'.") from None
        return {"days": (b - a).days, "weeks": round((b - a).days / 7, 2)}

    @tool(idempotent=True)
    def store_value(
        self,
        name: Annotated[
            str, Field(pattern=r"^[a-z][a-z0-9_]{0,31}$", description="Memory slot name, e.g. 'total'.")
        ],
        value: Number,
    ) -> dict[str, Any]:
        """Save a number under a name for later steps (kept for this episode)."""
        self.db.put("calc_memory", name, {"name": name, "value": value})
        return {"stored": name, "value": value}

    @tool(read_only=True)
    def recall_value(self, name: Annotated[str, Field(description="Memory slot name.")]) -> dict[str, Any]:
        """Read a number saved with store_value."""
        rec = self.require("calc_memory", name, "Memory slot", "Use store_value first.")
        return {"name": name, "value": rec["value"]}
