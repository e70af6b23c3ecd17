"""Sandbox images. Clade's own are built on this machine, never pulled: a Debian root filesystem
made with debootstrap (`rootfs`, mirrors read from the host's apt sources by `apt_sources`),
imported as the base image; wheels resolved and downloaded on the host for the target Python
(`wheels`) and committed as Python layers (`layers`); npm packages installed on the host (`npm`)
for layers of files; the agent runtime copied out of those images into a self-contained folder
mounted into any task image (`runtime`). A task's own image is used as it is, pulled by name
when absent (`pull`). `build` caches each by a digest of its inputs."""
