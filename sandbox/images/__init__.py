"""Sandbox images built on this machine, never pulled: a Debian root filesystem made with
debootstrap (`rootfs`, mirrors read from the host's apt sources by `apt_sources`), imported as the
base image; wheels downloaded on the host (`wheels`) and committed as Python layers (`layers`);
npm packages installed on the host (`npm`) for layers of files; `build` caches each image by a
digest of its recipe."""
