#!/usr/bin/env python3
"""Prints configuration.md's table of settings from `eddy config show`.

Run with the eddy to describe, from a directory without eddy.toml and with no
EDDY_* variables set, so that every value shown is the default:

    env -i PATH="$PATH" python3 docs/user/settings-table.py target/release/eddy

`eddy config show` prints each setting as a riak.conf `##` comment (its meaning)
followed by `name = value  # where the value came from`.
"""
import subprocess
import sys


def settings(eddy):
    out = subprocess.run([eddy, "config", "show"], check=True,
                         capture_output=True, text=True).stdout
    doc = ""
    for line in out.splitlines():
        if line.startswith("## "):
            doc = line[3:]
            continue
        head, _, source = line.rpartition("  # ")
        name, _, value = head.partition(" = ")
        if source != "default":
            sys.exit(f"{name} comes from {source}: run without eddy.toml and EDDY_*")
        yield name.strip(), value.strip(), doc


def env_name(name):
    return "EDDY_" + name.upper().replace(".", "_")


def main():
    eddy = sys.argv[1] if len(sys.argv) > 1 else "eddy"
    print("| setting | default | variable | meaning |")
    print("|---|---|---|---|")
    for name, value, doc in settings(eddy):
        cell = doc.replace("|", "\\|")
        print(f"| `{name}` | `{value}` | `{env_name(name)}` | {cell} |")


main()
