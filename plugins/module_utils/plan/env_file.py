# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""An environment file as systemd's ``EnvironmentFile=`` and the role's launcher read it, as data.

The engine's unit loads ``vllm_environment_files`` after the role's own file
(``vllm.service.j2``), and the ``vllm_service_manager: none`` launcher
(``vllm-launch.sh.j2``) reads them the same way: ``KEY=VALUE`` lines, white
space around the key and the value dropped, ``#`` and ``;`` comment lines,
one pair of double or single quotes around a value removed (inside double
quotes ``\\"``, ``\\\\``, ``\\``` and ``\\$`` stand for the character), a line
whose key is not a variable name (``export BAR=1``, ``9X=1``) ignored, a later
line winning.  ``parse`` is that reading in Python, so preflight can hold the
files to the rules ``vllm_environment`` is held to (plan/input_check.py
``environment_file_problems``); tests/unit/roles/test_vllm_launcher.py runs the
launcher on the same file and compares.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import re
from typing import Dict, List, Tuple

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ESCAPE = re.compile(r"\\([\\\"`$])")


def parse(text: str) -> Dict[str, str]:
    """Variable -> value of an environment file's ``text`` (a later line of a variable wins)."""
    return dict(assignments(text))


def assignments(text: str) -> List[Tuple[str, str]]:
    """Every ``(variable, value)`` of an environment file's ``text``, in order, a variable set twice included (the
    check holds each to the rules: a reader that takes another line as the last one gets a checked value too)."""
    result: List[Tuple[str, str]] = []
    # Lines end at a newline, or a carriage return, as systemd's EnvironmentFile= reader ends them (its NEWLINE is
    # "\n\r"); str.splitlines also breaks at \v, \f and others, where those readers see one line (review rounds 3, 7).
    # A carriage return not before a newline is refused (control_characters): the launcher's read would not split.
    for line in re.split(r"\r?\n|\r", text or ""):
        line = line.lstrip()
        if not line or line[0] in "#;" or "=" not in line:
            continue
        key, value = line.split("=", 1)
        key = key.rstrip()
        if not _KEY.match(key):
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = _ESCAPE.sub(r"\1", value[1:-1])
        elif len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1]
        result.append((key, value))
    return result


def ambiguous_lines(text: str) -> List[int]:
    """Line numbers (from 1) that systemd's EnvironmentFile= reader may read otherwise than :func:`parse` and the
    launcher do, so a file that holds one is refused (review rounds 8 and 9).

    systemd joins a line ending in a backslash with the next (a comment's too), reads a quote across line ends (one
    reopened after a closed one as well), drops a backslash before any character outside quotes and joins adjacent
    quoted pieces; the launcher and :func:`parse` read line by line and keep those characters.  Where they agree is
    a plain subset: no backslash anywhere in a value, and no quote in it but one pair around the whole value.
    """
    found = []
    for number, line in enumerate(re.split(r"\r?\n|\r", text or ""), 1):
        stripped = line.strip()
        # a backslash at the end joins lines there; a character beyond ASCII (U+00A0, a no-break space) is white
        # space to this check's strip but part of the value to systemd (review round 10)
        if stripped.endswith("\\") or any(ord(char) > 0x7e for char in line):
            found.append(number)
            continue
        if not stripped or stripped[0] in "#;" or "=" not in stripped:
            continue
        value = stripped.split("=", 1)[1].strip()
        inner = value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"" else value
        if "\\" in value or "'" in inner or '"' in inner:
            found.append(number)
    return found


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)")


def control_characters(text: str) -> bool:
    """Whether ``text`` holds a control character other than tab, newline and a carriage return before a newline:
    systemd, the launcher's shell and :func:`parse` could read such a line differently (systemd ends a line at a
    lone carriage return, the launcher does not), so a file that holds one is refused."""
    return bool(_CONTROL.search(text or ""))
