"""One located-error type: where a value was read (file, line, column, key path) and what is wrong.

Every tool's bad-input error derives from it (the config's ConfigError, the provisioner's
InputError, the YAML reader's UnsafeInput, the policy check's InputError, ...), so a caller can
catch and print any of them alike; each subclass keeps the wording its tool always printed.
"""
from __future__ import annotations

import unicodedata

# Control characters (an ANSI escape recolours or clears the terminal), format characters (a
# right-to-left override reverses what follows), line and paragraph separators, and the
# surrogates Python uses for undecodable bytes in a file name (printing one is a UnicodeEncodeError).
_HIDDEN = ("Cc", "Cf", "Zl", "Zp", "Cs")


def shown(name: object) -> str:
    """A file name (or any text the user did not type as a message) as it is printed in an
    error: every control, format or undecodable character escaped (`\\x1b`, `\\u202e`), the
    rest unchanged. Every message that prints a path goes through here."""
    text = str(name)
    if text.isprintable():
        return text
    return "".join(c if unicodedata.category(c) not in _HIDDEN
                   else (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}") for c in text)


class LocatedError(Exception):
    """Bad input, located. Every field but `message` may be unknown (None)."""

    def __init__(self, file: str | None, line: int | None, column: int | None, key_path: str | None,
                 message: str, obj: str | None = None):
        self.file, self.line, self.column = file, line, column
        self.key_path, self.message, self.obj = key_path, message, obj
        super().__init__(self.render())

    @property
    def where(self) -> str | None:
        """`file`, `file:line` or `file:line:column`, as compilers print it."""
        if not self.file:
            return None
        file = shown(self.file)
        if self.line is None:
            return file
        return f"{file}:{self.line}" if self.column is None else f"{file}:{self.line}:{self.column}"

    def render(self) -> str:
        """`file:line:column: object: key.path: message`, leaving out what is unknown."""
        return ": ".join(p for p in (self.where, self.obj, self.key_path, self.message) if p)


class Refusal(LocatedError):
    """A located error raised with its message first, as `raise CronError("...")`; file and key
    path, when known, follow as keywords."""

    def __init__(self, message: str = "", *, file: str | None = None, line: int | None = None,
                 column: int | None = None, key_path: str | None = None, obj: str | None = None):
        super().__init__(file, line, column, key_path, str(message), obj)


__all__ = ["LocatedError", "Refusal", "shown"]
