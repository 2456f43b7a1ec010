"""The one exception type for bad input: its message is the one line the user sees."""


class CatalogError(ValueError):
    """Bad configuration or outputs; str(error) is a complete, single-line explanation."""
