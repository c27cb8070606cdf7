"""The one exception type the public surface raises for bad input."""
from kubefacts.errors import LocatedError


class InputError(LocatedError, ValueError):
    """Invalid input: names where it came from (file/object) and the key path that is wrong."""

    def __init__(self, message: str, *, origin: str | None = None, obj: str | None = None,
                 path: str | None = None, line: int | None = None, column: int | None = None):
        super().__init__(origin, line, column, path, message, obj)
        self.origin = origin
        self.path = path
