"""The `clade` command line: talks to the service's REST API."""
