"""Settings that are one named choice among rule objects (the stopping rule, the priority): how such a rule is spelled
in Python and in YAML files, and how it is read back."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeVar

__all__ = ["NamedChoice", "read_choice"]

Choice = TypeVar("Choice", bound="NamedChoice")


@dataclass(frozen=True)
class NamedChoice:
    """A rule object that a setting names: a frozen dataclass whose fields all have defaults (base class)."""

    #: the name the rule is spelled with
    name: ClassVar[str] = ""

    @property
    def spelling(self) -> str | dict[str, dict[str, Any]]:
        """:return: how to write the rule in a YAML entry: its name, or a one-key mapping of its name to the fields
            that differ from their defaults"""
        values = {field.name: getattr(self, field.name) for field in fields(self)}
        changed = {key: value for key, value in values.items() if value != type(self)().__dict__[key]}
        return {self.name: changed} if changed else self.name


def read_choice(value: Any, choices: dict[str, type[Choice]], setting: str, owner: str, example: str) -> Choice:
    """Read a rule from how it is spelled.

    :param value: a rule object, a name, or a one-key mapping of a name to the rule's fields, as a YAML file writes it
        (``{"success": {"refine": 100}}``)
    :param choices: the rules by name
    :param setting: the setting's name, for the message
    :param owner: who takes it (``"DirPG"``), for the message
    :param example: a rule object to show in the message (``"SuccessStop(refine=100)"``)
    :return: the rule
    :raises ValueError: naming the rules, for anything else
    """
    prefix = f"{owner}: " if owner else ""
    if isinstance(value, tuple(choices.values())):
        return value
    if isinstance(value, str) and value in choices:
        return choices[value]()
    if isinstance(value, dict) and len(value) == 1:
        ((name, kwargs),) = value.items()
        if name in choices and isinstance(kwargs, dict):
            try:
                return choices[name](**kwargs)
            except TypeError as error:
                allowed = [field.name for field in fields(choices[name])]
                message = f"{prefix}{setting}={value!r}: the rule {name!r} takes the fields {allowed} ({error})"
                raise ValueError(message) from None
            except ValueError as error:
                raise ValueError(f"{prefix}{setting}={value!r}: {error}") from None
    module = next(iter(choices.values())).__module__
    raise ValueError(
        f"{prefix}{setting} must be one of {list(choices)}, a rule object (e.g. {example} from {module}), or a mapping "
        f"such as {{{next(iter(choices))!r}: {{...}}}}, got {value!r}"
    )
