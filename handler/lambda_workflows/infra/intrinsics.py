"""Resolve the few CloudFormation intrinsic functions infra/ needs: Ref, GetAtt, Sub, Join, If.

``lambda_workflows.infra.provision`` creates resources outside CloudFormation, so it has to stand in
for it when a property points at another resource (a redrive policy's ``!GetAtt
WorkDeadLetterQueue.Arn``) or at a parameter (``!Ref RetentionDays``). Anything else (conditions,
``!If``, ``!Select``) is refused loudly rather than guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Unresolvable", "Values", "references", "resolve"]

# ${Name}, ${Resource.Attribute}; ${!Literal} is an escaped "${Literal}".
_SUB_VARIABLE = re.compile(r"\$\{([^}]*)\}")


class Unresolvable(ValueError):
    """A value uses an intrinsic function or a name infra/ cannot resolve."""


@dataclass
class Values:
    """What names resolve to: ``Ref`` targets and ``GetAtt`` attributes.

    Attributes:
        refs: ``Ref`` name (parameter, pseudo parameter, logical id) → value.
        attributes: (logical id, attribute) → value.
    """

    refs: dict[str, Any] = field(default_factory=dict)
    attributes: dict[tuple[str, str], Any] = field(default_factory=dict)
    conditions: dict[str, Any] = field(default_factory=dict)  # the template's Conditions

    def holds(self, name: str) -> bool:
        """Whether the template's condition ``name`` holds for these values."""
        if name not in self.conditions:
            raise Unresolvable(f"nothing known for Condition {name!r}")
        return _holds(self.conditions[name], self)

    def ref(self, name: str) -> Any:
        """The value of ``{"Ref": name}``."""
        if name not in self.refs:
            raise Unresolvable(f"nothing known for Ref {name!r}")
        return self.refs[name]

    def get_att(self, logical_id: str, attribute: str) -> Any:
        """The value of ``{"Fn::GetAtt": [logical_id, attribute]}``."""
        if (logical_id, attribute) not in self.attributes:
            raise Unresolvable(f"nothing known for GetAtt {logical_id}.{attribute}")
        return self.attributes[logical_id, attribute]


def resolve(value: Any, values: Values) -> Any:
    """``value`` with every Ref, Fn::GetAtt, Fn::Sub and Fn::Join replaced by its result.

    Raises:
        Unresolvable: another intrinsic function, or a name ``values`` does not know.
    """
    if isinstance(value, list):
        return [resolve(item, values) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((key, argument),) = value.items()
        if key == "Ref":
            return values.ref(argument)
        if key == "Fn::GetAtt":
            logical_id, attribute = resolve(argument, values)
            return values.get_att(logical_id, attribute)
        if key == "Fn::Sub":
            return _sub(argument, values)
        if key == "Fn::Join":
            delimiter, items = argument
            return str(delimiter).join(str(item) for item in resolve(items, values))
        if key == "Fn::If":
            name, when_true, when_false = argument
            return resolve(when_true if values.holds(name) else when_false, values)
        if key.startswith("Fn::") or key == "Condition":
            raise Unresolvable(f"infra/ does not resolve {key}")
    return {key: resolve(item, values) for key, item in value.items()}


def _holds(condition: Any, values: Values) -> bool:
    """A condition's value: Fn::Equals, Fn::Not, Fn::And, Fn::Or and Condition."""
    ((key, argument),) = condition.items()
    if key == "Condition":
        return values.holds(argument)
    if key == "Fn::Equals":
        left, right = (str(resolve(side, values)) for side in argument)
        return left == right
    if key == "Fn::Not":
        return not _holds(argument[0], values)
    if key in ("Fn::And", "Fn::Or"):
        found = [_holds(item, values) for item in argument]
        return all(found) if key == "Fn::And" else any(found)
    raise Unresolvable(f"infra/ does not evaluate the condition function {key}")


def _sub(argument: Any, values: Values) -> str:
    if isinstance(argument, list):
        text, local = argument
        local_values = resolve(local, values)
    else:
        text, local_values = argument, {}

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name.startswith("!"):
            return "${" + name[1:] + "}"
        if name in local_values:
            return str(local_values[name])
        logical_id, dot, attribute = name.partition(".")
        if dot:
            return str(values.get_att(logical_id, attribute))
        return str(values.ref(name))

    return _SUB_VARIABLE.sub(replace, str(text))


def references(value: Any) -> set[str]:
    """The names ``value`` refers to through Ref, Fn::GetAtt and Fn::Sub (pseudo parameters
    such as ``AWS::Region`` included)."""
    found: set[str] = set()
    if isinstance(value, list):
        for item in value:
            found |= references(item)
    elif isinstance(value, dict):
        for key, argument in value.items():
            if key == "Ref" and isinstance(argument, str):
                found.add(argument)
            elif key == "Fn::GetAtt" and isinstance(argument, list) and argument:
                found.add(str(argument[0]))
            elif key == "Fn::Sub":
                text = argument[0] if isinstance(argument, list) else argument
                for name in _SUB_VARIABLE.findall(str(text)):
                    if not name.startswith("!"):
                        found.add(name.partition(".")[0])
                found |= references(argument[1:] if isinstance(argument, list) else [])
            else:
                found |= references(argument)
    return found
