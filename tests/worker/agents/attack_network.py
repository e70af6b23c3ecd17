"""Tries every way out of the sandbox: public internet, DNS, the Docker bridge, the host's
service and the real LLM upstream directly, the Docker socket. Only the gateway should answer."""

from __future__ import annotations

import os
import socket
import urllib.request

from probe import TARGETS, chat, refused, report

DNS_QUERY = bytes.fromhex("abcd01000001000000000000076578616d706c6503636f6d0000010001")  # example.com A


def tcp(host: str, port: int) -> str:
    try:
        with socket.create_connection((host, port), timeout=3):
            return "CONNECTED"
    except OSError as exc:
        return refused(exc)


def udp_dns(host: str, port: int) -> str:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(3)
            sock.sendto(DNS_QUERY, (host, port))
            return f"ANSWERED {len(sock.recv(512))} bytes"
    except OSError as exc:
        return refused(exc)


def resolve(name: str) -> str:
    try:
        return f"RESOLVED {socket.getaddrinfo(name, 443)[0][4]}"
    except OSError as exc:
        return refused(exc)


def http_get(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            return f"ANSWERED {response.status}: {response.read(200)!r}"
    except OSError as exc:
        return refused(exc)


def unix(path: str) -> str:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(3)
            sock.connect(path)
            return "CONNECTED"
    except OSError as exc:
        return refused(exc)


control = chat("hello from the network probe")
report(
    {
        "tcp": {f"{host}:{port}": tcp(host, port) for host, port in TARGETS["tcp"]},
        "udp_dns": {f"{host}:{port}": udp_dns(host, port) for host, port in TARGETS["udp"]},
        "resolve": {name: resolve(name) for name in ("example.com", "example.org")},
        "http": {url: http_get(url) for url in TARGETS["http"]},
        "docker_socket": {path: unix(path) for path in ("/var/run/docker.sock", "/run/docker.sock")},
        "interfaces": sorted(os.listdir("/sys/class/net")),
        "gateway_control": control.get("status"),
    }
)
