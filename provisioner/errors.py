"""The one exception type the public surface raises for bad input, and how a file name is shown in it."""
import unicodedata


class InputError(ValueError):
    """Invalid input: names where it came from (file/object) and the key path that is wrong."""

    def __init__(self, message: str, *, origin: str | None = None, obj: str | None = None,
                 path: str | None = None):
        self.message = message
        self.origin = origin
        self.obj = obj
        self.path = path
        super().__init__(self._render())

    def _render(self) -> str:
        parts = [p for p in (shown(self.origin) if self.origin else None, self.obj, self.path) if p]
        return ": ".join(parts + [self.message])


# Control characters (an ANSI escape recolours or clears the terminal), format characters (a
# right-to-left override reverses what follows), line and paragraph separators, and the
# surrogates Python uses for undecodable bytes in a file name (printing one is a UnicodeEncodeError).
_HIDDEN = ("Cc", "Cf", "Zl", "Zp", "Cs")


def shown(name) -> str:
    """A file name (or any text the user did not type as a message) as it is printed in an
    error: every control, format or undecodable character escaped (`\\x1b`, `\\u202e`), the
    rest unchanged. Every message that prints a path goes through here."""
    text = str(name)
    if text.isprintable():
        return text
    return "".join(c if unicodedata.category(c) not in _HIDDEN
                   else (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}") for c in text)
