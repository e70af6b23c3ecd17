"""The archive: agents' code in a bare git repository, their records in the database."""
