"""The one exception type for bad input: its message is the one line the user sees."""


class CatalogError(ValueError):
    """Bad configuration or outputs; str(error) is a complete, single-line explanation."""


class NotOffered(CatalogError):
    """An instance type asked for in a region that does not offer it: which backend, region and type
    (so a caller such as the survey's preflight can leave that backend out and go on)."""

    def __init__(self, message: str, *, backend: str, instance_type: str, region: str) -> None:
        super().__init__(message)
        self.backend, self.instance_type, self.region = backend, instance_type, region
