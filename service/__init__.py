"""The service: the archive (git and database, of which it is the only writer), the REST API, the run
driver with its selection strategies, and the simulator that runs that driver on synthetic landscapes."""
