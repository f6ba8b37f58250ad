# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Package index credentials out of command lines, plans and facts: the URLs without them, the credentials in a netrc.

An index URL may carry its credentials (``https://user:secret@mirror/simple``,
pip's "Basic HTTP authentication"). Handed to pip on its command line, that
secret is in the process list of the node, in the task's result and in the
plan's ``pip_args`` (a fact). pip takes the same credentials from a netrc file
when the URL has none (pip's documentation, "Authentication", "netrc
support"; requests' ``get_netrc_auth`` reads the file ``NETRC`` names, else
``~/.netrc``). So the role hands the planner the
URLs without credentials, writes the credentials to a 0600 netrc file and
points ``NETRC`` at it in pip's environment.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import re
from typing import Any, Dict, List, Tuple
from urllib.parse import unquote, urlsplit, urlunsplit


def has_credentials(url: Any) -> bool:
    """Whether ``url`` carries a user or a password (``scheme://user[:password]@host/...``)."""
    text = str(url or "")
    if "://" not in text:
        return False
    return "@" in urlsplit(text).netloc


def credentials(url: Any) -> Dict[str, str]:
    """``url`` without its credentials (``url``), and the ``username`` and ``password`` it carried (unquoted; both
    empty for a URL without them, the password empty for a token alone).  Any scheme: ``git+https://``, ``ftp://``."""
    text = str(url or "")
    if not has_credentials(text):
        return {"url": text, "username": "", "password": ""}
    parts = urlsplit(text)
    userinfo, host = parts.netloc.rsplit("@", 1)
    login, _sep, password = userinfo.partition(":")
    return {"url": urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)),
            "username": unquote(login), "password": unquote(password)}


#: A URL with ``user[:password]@`` anywhere in a text (an apt source line: ``deb [signed-by=...] https://u:p@host ...``).
_EMBEDDED = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s@]*@")


def mentions_credentials(text: Any) -> bool:
    """Whether ``text`` holds a URL with ``user[:password]@`` anywhere, not only at its start (:func:`has_credentials`)."""
    return isinstance(text, str) and bool(_EMBEDDED.search(text))


def _carries_credentials(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_carries_credentials(key) or _carries_credentials(item) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return any(_carries_credentials(item) for item in value)
    return isinstance(value, str) and (has_credentials(value) or mentions_credentials(value))


def credential_values(values: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """``values`` (variable -> value) split in two: ``plain``, and ``credentials``, the variables whose value holds a
    URL with ``user[:password]@`` anywhere (a string, or one in a list or mapping).

    The input check sends the second part in its no_log option, so that a credential a variable may legitimately
    carry (``vllm_model_src``'s ``user:token@``) never reaches the module's arguments in the play's output; the
    rules still see every value.
    """
    plain = {name: value for name, value in (values or {}).items() if not _carries_credentials(value)}
    return {"plain": plain, "credentials": {name: value for name, value in (values or {}).items() if name not in plain}}


def without_credentials(url: Any) -> str:
    """``url`` without ``user[:password]@`` or ``token@``, for what is printed or stored (a marker file, a fact)."""
    return credentials(url)["url"]


def split(url: Any) -> Tuple[str, Dict[str, str]]:
    """``url`` without its credentials, and the netrc entry they become (empty for a URL without them).

    A token alone (``https://TOKEN@host/simple``, pip's single-part token) is the login, with an empty password.
    """
    text = str(url or "")
    if not has_credentials(text):
        return text, {}
    parts = urlsplit(text)
    userinfo, host = parts.netloc.rsplit("@", 1)
    login, _sep, password = userinfo.partition(":")
    entry = {"machine": (parts.hostname or host.split(":")[0]), "login": unquote(login), "password": unquote(password)}
    for field in ("machine", "login", "password"):
        if any(char.isspace() for char in entry[field]) or '"' in entry[field]:
            raise ValueError("an index URL's credentials must not hold white space or quotes (a netrc file cannot carry them)")
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)), entry


def netrc_text(entries: List[Dict[str, str]]) -> str:
    """The netrc file of ``entries``, one ``machine`` line each (the first entry of a host wins, as in netrc)."""
    seen, lines = set(), []
    for entry in entries:
        if not entry or entry["machine"] in seen:
            continue
        seen.add(entry["machine"])
        line = f"machine {entry['machine']} login {entry['login']}"
        lines.append(line + (f" password {entry['password']}" if entry["password"] else ""))
    return "".join(line + "\n" for line in lines)


def index_auth(index_url: Any, extra_index_urls: Any) -> Dict[str, Any]:
    """The index URLs without credentials (``index_url``, ``extra_index_urls``) and the ``netrc`` text of those they had."""
    index, first = split(index_url)
    extras = [split(url) for url in (extra_index_urls or [])]
    return {"index_url": index, "extra_index_urls": [url for url, _entry in extras],
            "netrc": netrc_text([first] + [entry for _url, entry in extras])}
