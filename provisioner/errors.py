"""The one exception type the public surface raises for bad input."""
from kubefacts.errors import LocatedError


class InputError(LocatedError, ValueError):
    """Invalid input: names where it came from (file/object) and the key path that is wrong."""

    def __init__(self, message: str, *, origin: str | None = None, obj: str | None = None,
                 path: str | None = None, line: int | None = None, column: int | None = None):
        super().__init__(origin, line, column, path, message, obj)
        self.origin = origin
        self.path = path


class InvalidObjects(InputError):
    """Karpenter objects the API server or Karpenter refuses (kubefacts.validation's verdicts,
    every one kept in `errors`); reads as the first. `provisioner ... --skip-invalid` lists and
    skips them instead."""

    def __init__(self, errors: list):
        first = errors[0]
        super().__init__(first.message, origin=first.origin, obj=first.obj, path=first.key_path)
        self.errors = list(errors)
