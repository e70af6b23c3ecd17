class ConfigError(Exception):
    """Every error confkit raises: bad syntax, a missing key, a value of the wrong type."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message if line is None else f"line {line}: {message}")
        self.line = line
