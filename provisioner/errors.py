"""The one exception type the public surface raises for bad input."""


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
        parts = [p for p in (self.origin, self.obj, self.path) if p]
        return ": ".join(parts + [self.message])
