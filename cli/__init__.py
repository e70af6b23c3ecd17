"""The `clade` command line (`main` assembles it).

Most commands are clients of the service's REST API (`client`, `context`): `seed`, `run`, `agent`,
`bench list|run`, `worker-token`. Others act on this machine: `up` and `demo` start the scripted
model, the service and a worker together (`stack`, `demo`); `serve`, `worker`, `db upgrade` and
`images build` start processes or build images here (`local`); `bench check|prepare` grade and
prepare with this machine's Docker; `backup` and `restore` read the data dir and database directly
(`maintenance`); `doctor` checks each component; `sim` runs the simulator, no service needed.
"""
