"""The one exception type the tool raises for anything a user can act on."""


class ClusterError(Exception):
    """A failure explained in one line: what went wrong and what to do.

    ``code`` is the process exit code the CLI uses: 1 for an operation that
    failed, 2 for bad input (unknown node, wrong folder, bad option).
    ``details`` optionally holds extra lines (such as a log tail) that the CLI
    prints before the one-line message.
    """

    def __init__(self, message, code=1, details=None):
        super().__init__(message)
        self.code = code
        self.details = details or ""
